/**
 * Issue 12, part 3: a test event on demand goes the real way (signed, logged, retried, listed);
 * a recovery queues again a window's deliveries that did not succeed (or all), in the
 * background, once across two webhooks replicas sharing the database, and the same request
 * while it is unfinished answers the same recovery.
 */
import type { Knex } from "knex";
import { Webhook } from "standardwebhooks";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { recoverNextBatch, type RecoveryRow } from "../../services/webhooks/webhooks.recoveries.repository";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface SubscriptionJson {
  id: number;
  secret?: string;
}
interface DeliveryJson {
  id: number;
  webhookId: string;
  event: string;
  status: string;
  payload: Record<string, unknown>;
  attempts: { statusCode: number | null }[];
}
interface RecoveryJson {
  id: number;
  status: string;
  examined: number;
  queued: number;
  all: boolean;
}

const ENV = {
  WEBHOOK_RETRY_SCHEDULE: "0.2,0.2",
  // An answer always counts as one, however busy the machine: no attempt here is meant to time out.
  WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
  WEBHOOK_DISPATCH_INTERVAL_MS: "50",
  OUTBOX_RELAY_INTERVAL_MS: "50",
};

describe("webhooks: test event and recovery", () => {
  let replicaA: TestBroker;
  let replicaB: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  const stranger: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  let seq = 0;

  const on = (replica: TestBroker) => ({
    call: <T>(action: string, params: object, as: Principal = partner) => replica.call<T>(action, params, as),
    callWithMeta: async <T>(action: string, params: object) => {
      const meta: Record<string, unknown> = { client: partner };
      const result = await replica.broker.call<T, object>(action, params, { meta });
      return { result, status: meta.$statusCode as number | undefined, location: meta.$location as string | undefined };
    },
  });
  const subscribe = (path: string) =>
    on(replicaA).call<SubscriptionJson>("webhooks.subscribe", {
      event: "sales_order_created",
      url: `${receiver.url}${path}`,
    });
  const deliveriesOf = async (id: number) =>
    (await on(replicaA).call<{ items: DeliveryJson[] }>("webhooks.deliveries", { id })).items;
  const receivedOn = (path: string) => receiver.received.filter((r) => r.path === path);

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(async () => {
    replicaA = await startTestBroker({ services: ["webhooks"], env: ENV });
    replicaB = await startTestBroker({ services: ["webhooks"], env: ENV, database: replicaA.database });
    source = await addEventSource(replicaA.broker, "webhooks_recover_source");
    receiver = await startReceiver();
    db = openDatabase(replicaA.database.url);
  });
  afterAll(async () => {
    await replicaB?.stop();
    await replicaA?.stop();
    await receiver?.close();
  });
  beforeEach(() => receiver.answerWith(() => 200));

  it("when a test is asked for, then a signed webhook_test delivery goes to that subscription only, is retried after a failure and is listed with its attempts", async () => {
    const sub = await subscribe("/test");
    const bystander = await subscribe("/bystander");
    receiver.answerWith((r, before) => (r.path === "/test" && before === 0 ? 500 : 200));

    const { result: queued, status } = await on(replicaB).callWithMeta<DeliveryJson>("webhooks.sendTest", {
      id: sub.id,
    });
    expect(status).toBe(202);
    expect(queued).toMatchObject({
      event: "webhook_test",
      status: "pending",
      payload: { test: true, subscriptionId: sub.id, event: "sales_order_created" },
    });

    await receiver.waitFor(() => receivedOn("/test").length === 2, EVENTUALLY_MS);
    const [first, second] = receivedOn("/test");
    expect(first.headers["x-webhook-event"]).toBe("webhook_test");
    expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
    expect(new Webhook(sub.secret ?? "").verify(second.body, second.headers)).toMatchObject({
      test: true,
      subscriptionId: sub.id,
    });

    const [listed] = await until(
      "the test delivery succeeding",
      () => deliveriesOf(sub.id),
      (d) => d[0]?.status === "succeeded",
    );
    expect(listed).toMatchObject({ id: queued.id, webhookId: first.headers["webhook-id"], event: "webhook_test" });
    expect(listed.attempts.map((a) => a.statusCode)).toEqual([500, 200]);
    expect(receivedOn("/bystander")).toEqual([]);
    expect(await deliveriesOf(bystander.id)).toEqual([]);
  });

  it("when another client asks for a test or a recovery of a subscription, then it is not found", async () => {
    const sub = await subscribe("/not-yours");
    await expect(on(replicaA).call("webhooks.sendTest", { id: sub.id }, stranger)).rejects.toMatchObject({ code: 404 });
    await expect(
      on(replicaA).call("webhooks.recover", { id: sub.id, since: new Date().toISOString() }, stranger),
    ).rejects.toMatchObject({ code: 404 });
  });

  it("when deliveries failed during an outage, then a recovery, asked twice on two replicas, runs once and sends each failed one again; `all` sends every one", async () => {
    const sub = await subscribe("/outage");
    const since = new Date(Date.now() - 1_000).toISOString();
    // Down for two events, up for the third.
    receiver.answerWith((r) => (r.path === "/outage" && !r.body.includes('"up":true') ? 503 : 200));
    await source.emit([
      { event: "sales_order_created", ownerClientId: partner.clientId, data: { n: ++seq } },
      { event: "sales_order_created", ownerClientId: partner.clientId, data: { n: ++seq } },
      { event: "sales_order_created", ownerClientId: partner.clientId, data: { n: ++seq, up: true } },
    ]);
    const settled = await until(
      "the outage's deliveries settling",
      () => deliveriesOf(sub.id),
      (d) => d.length === 3 && d.every((x) => x.status === "failed" || x.status === "succeeded"),
    );
    const failedIds = settled.filter((d) => d.status === "failed").map((d) => d.webhookId);
    expect(failedIds).toHaveLength(2);
    receiver.answerWith(() => 200);
    const before = receivedOn("/outage").length;

    const [a, b] = await Promise.all([
      on(replicaA).callWithMeta<RecoveryJson>("webhooks.recover", { id: sub.id, since }),
      on(replicaB).callWithMeta<RecoveryJson>("webhooks.recover", { id: sub.id, since }),
    ]);
    expect(b.result.id).toBe(a.result.id);
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    expect(a.location).toBe(`/api/v1/webhooks/${sub.id}/recoveries/${a.result.id}`);

    const done = await until(
      "the recovery finishing",
      () => on(replicaB).call<RecoveryJson>("webhooks.recovery", { id: sub.id, recoveryId: a.result.id }),
      (r) => r.status === "done",
    );
    expect(done).toMatchObject({ examined: 3, queued: 2, all: false });
    await receiver.waitFor(() => receivedOn("/outage").length >= before + 2, EVENTUALLY_MS);
    await until(
      "the recovered deliveries succeeding",
      () => deliveriesOf(sub.id),
      (d) => d.every((x) => x.status === "succeeded"),
    );
    const resent = receivedOn("/outage")
      .slice(before)
      .map((r) => r.headers["webhook-id"]);
    expect(resent.sort()).toEqual([...failedIds].sort());

    // Finished, so the same request is a new recovery; with `all`, the successful ones go again too.
    const everything = await on(replicaA).callWithMeta<RecoveryJson>("webhooks.recover", {
      id: sub.id,
      since,
      all: true,
    });
    expect(everything.status).toBe(202);
    expect(everything.result.id).not.toBe(a.result.id);
    expect(
      await until(
        "the second recovery finishing",
        () => on(replicaA).call<RecoveryJson>("webhooks.recovery", { id: sub.id, recoveryId: everything.result.id }),
        (r) => r.status === "done",
      ),
    ).toMatchObject({ examined: 3, queued: 3, all: true });
  });

  it("when a recovery is unfinished, then the same request answers it, another window is 409, and a replica takes it over once its holder's lease ended", async () => {
    const sub = await subscribe("/held");
    const since = "2026-01-01T00:00:00Z";
    // A recovery held by a replica that died: its lease is still running.
    const [held] = await db
      .withSchema("webhooks")
      .table("recoveries")
      .insert({
        subscription_id: sub.id,
        since,
        until: db.fn.now(),
        all_deliveries: false,
        status: "running",
        claim_token: "00000000-0000-4000-8000-000000000000",
        claimed_until: db.raw("now() + interval '1 hour'"),
      })
      .returning("id");
    const heldId = Number((held as { id: string }).id);

    const again = await on(replicaA).callWithMeta<RecoveryJson>("webhooks.recover", { id: sub.id, since });
    expect(again).toMatchObject({ status: 200, result: { id: heldId, status: "running" } });
    await expect(on(replicaA).call("webhooks.recover", { id: sub.id, since, all: true })).rejects.toMatchObject({
      code: 409,
      data: { recoveryId: heldId },
    });

    await db
      .withSchema("webhooks")
      .table("recoveries")
      .where({ id: heldId })
      .update({ claimed_until: db.raw("now() - interval '1 second'") });
    expect(
      await until(
        "the recovery taken over",
        () => on(replicaA).call<RecoveryJson>("webhooks.recovery", { id: sub.id, recoveryId: heldId }),
        (r) => r.status === "done",
      ),
    ).toMatchObject({ examined: 0, queued: 0 });
  });

  it("when the window holds more deliveries than a batch, out of id order and within one millisecond, then the walk examines each exactly once", async () => {
    const sub = await subscribe("/walk");
    // Seven failed deliveries inside the window, their created_at falling as their id rises, two
    // by two on the same microsecond, all within one millisecond (a cursor kept as a Date would
    // lose their order); and one before the window.
    await db.raw(
      `WITH g AS (
         SELECT g, 'walk-' || ?::int || '-' || g AS event_id,
                CASE WHEN g = 0 THEN timestamptz '2025-12-31T23:59:59Z'
                     ELSE timestamptz '2026-01-01T00:00:00Z' + ((8 - g) / 2) * interval '1 microsecond' END AS t
           FROM generate_series(0, 7) g
       ), e AS (
         INSERT INTO webhooks.events (id, event, owner_client_id, entity, entity_id, occurred_at, body, received_at)
         SELECT event_id, 'sales_order_created', ?, 'order', g, t, '{"walk":' || g || '}', t FROM g
       )
       INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count, created_at, updated_at)
       SELECT ?, event_id, 'msg_walk_' || ?::int || '_' || g, 'failed', 1, t, t FROM g ORDER BY g`,
      [sub.id, partner.clientId, sub.id, sub.id],
    );
    // Held by no replica of this file (its lease runs for an hour): the walk below is the only one.
    const [claim] = (await db
      .withSchema("webhooks")
      .table("recoveries")
      .insert({
        subscription_id: sub.id,
        since: "2026-01-01T00:00:00Z",
        until: "2026-01-01T00:00:01Z",
        all_deliveries: false,
        status: "running",
        claim_token: "00000000-0000-4000-8000-000000000001",
        claimed_until: db.raw("now() + interval '1 hour'"),
      })
      .returning("*")) as RecoveryRow[];

    const steps: { queued: number; done: boolean }[] = [];
    while (steps.length < 10) {
      const step = await recoverNextBatch(db, claim, 3, 60_000);
      if (!step) throw new Error("the claim was lost");
      steps.push(step);
      if (step.done) break;
    }
    expect(steps).toEqual([
      { queued: 3, done: false },
      { queued: 3, done: false },
      { queued: 1, done: true },
    ]);
    expect(await db.withSchema("webhooks").table("recoveries").where({ id: claim.id }).first()).toMatchObject({
      status: "done",
      examined: 7,
      queued: 7,
    });
    const outside = await db
      .withSchema("webhooks")
      .table("deliveries")
      .where({ subscription_id: sub.id, webhook_id: `msg_walk_${sub.id}_0` })
      .first<{ status: string }>("status");
    expect(outside?.status).toBe("failed");
  });

  it("when the window is malformed, then 422 names the field; an unknown recovery is 404", async () => {
    const sub = await subscribe("/bad-window");
    await expect(on(replicaA).call("webhooks.recover", { id: sub.id, since: "yesterday" })).rejects.toMatchObject({
      code: 422,
      data: [{ field: "since" }],
    });
    await expect(
      on(replicaA).call("webhooks.recover", {
        id: sub.id,
        since: "2026-02-01T00:00:00Z",
        until: "2026-01-01T00:00:00Z",
      }),
    ).rejects.toMatchObject({ code: 422, data: { errors: [{ path: "until" }] } });
    await expect(
      on(replicaA).call("webhooks.recover", { id: sub.id, since: "2026-01-01T00:00:00Z", all: "yes" }),
    ).rejects.toMatchObject({ code: 422, data: [{ field: "all" }] });
    await expect(on(replicaA).call("webhooks.recovery", { id: sub.id, recoveryId: 999_999 })).rejects.toMatchObject({
      code: 404,
    });
  });
});
