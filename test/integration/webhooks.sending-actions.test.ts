/**
 * Issue 21, parts 2-4, with a real receiver and two webhooks replicas sharing PostgreSQL:
 * - each attempt keeps its number, why it was made, a bounded part of the answer (never the
 *   request's key) and, after a honoured Retry-After, until when its endpoint is paused;
 * - a disabled subscription refuses test, redeliver and recover (409 subscription-disabled), its
 *   queued deliveries are cancelled, and a recovery after /enable sends them;
 * - Idempotency-Key on test, redeliver and recover replays, is 409 while in flight and 422 for
 *   another request; a recover equal to one of the last 60 s answers it.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { requestHash } from "../../shared/http/idempotency";
import { EVENTS } from "../../shared/messaging/events";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface AttemptJson {
  number: number;
  trigger: string;
  statusCode: number | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseBodyTruncated: boolean;
  pausedUntil: string | null;
  attemptedAt: string;
}
interface DeliveryJson {
  id: number;
  status: string;
  event: string;
  attempts: AttemptJson[];
}
interface Answered<T> {
  result: T;
  status?: number;
  location?: string;
  replayed: boolean;
}

const ENV = {
  WEBHOOK_RETRY_SCHEDULE: "0.2,0.2,0.2",
  WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
  WEBHOOK_DISPATCH_INTERVAL_MS: "50",
  OUTBOX_RELAY_INTERVAL_MS: "50",
};

describe("webhooks: what the endpoint answered, disabled means refused, idempotent actions", () => {
  let replicaA: TestBroker;
  let replicaB: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  let seq = 0;

  /** Calls as the partner, with an Idempotency-Key if given, and reads what the gateway would answer. */
  async function act<T>(replica: TestBroker, action: string, params: object, key?: string): Promise<Answered<T>> {
    const meta: Record<string, unknown> = { client: partner, ...(key ? { idempotencyKey: key } : {}) };
    const result = await replica.broker.call<T, object>(action, params, { meta });
    const headers = (meta.$responseHeaders ?? {}) as Record<string, string>;
    return {
      result,
      status: meta.$statusCode as number | undefined,
      location: meta.$location as string | undefined,
      replayed: headers["Idempotent-Replayed"] === "true",
    };
  }
  const subscribe = async (path: string) =>
    (
      await act<{ id: number; key: string }>(replicaA, "webhooks.subscribe", {
        event: "sales_order_created",
        url: `${receiver.url}${path}`,
      })
    ).result;
  const deliveriesOf = async (id: number) =>
    (await replicaA.call<{ items: DeliveryJson[] }>("webhooks.deliveries", { id }, partner)).items;
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
  const settled = (d: DeliveryJson[]) => d.length > 0 && d.every((x) => x.status !== "pending");

  beforeAll(async () => {
    replicaA = await startTestBroker({ services: ["webhooks"], env: ENV });
    replicaB = await startTestBroker({ services: ["webhooks"], env: ENV, database: replicaA.database });
    source = await addEventSource(replicaA.broker, "webhooks_sending_source");
    receiver = await startReceiver();
    db = openDatabase(replicaA.database.url);
  });
  afterAll(async () => {
    await replicaB?.stop();
    await replicaA?.stop();
    await receiver?.close();
  });
  beforeEach(() => receiver.answerWith(() => 200));

  describe("what the endpoint answered", () => {
    it("when attempts are answered, then each keeps its number, trigger, headers and the start of its body, with the request's key redacted", async () => {
      const sub = await subscribe("/answers");
      // The first answer echoes the request's key, in a header and a body longer than what is kept.
      receiver.answerWith((r, before) =>
        before === 0
          ? {
              status: 500,
              afterMs: 0,
              headers: {
                "Set-Cookie": "session=abc",
                "X-Echo-Key": r.headers["x-webhook-key"],
                ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`X-Extra-${i}`, "v"])),
              },
              body: `key=${r.headers["x-webhook-key"]} ${"é".repeat(3000)}`,
            }
          : { status: 200, afterMs: 0, body: "thanks" },
      );
      const tested = await act<DeliveryJson>(replicaB, "webhooks.sendTest", { id: sub.id });
      const [delivery] = await until("the test settling", () => deliveriesOf(sub.id), settled);
      expect(delivery.id).toBe(tested.result.id);
      const [failed, ok] = delivery.attempts;
      expect(failed).toMatchObject({ number: 1, trigger: "test", statusCode: 500, responseBodyTruncated: true });
      expect(ok).toMatchObject({
        number: 2,
        trigger: "retry",
        statusCode: 200,
        responseBody: "thanks",
        responseBodyTruncated: false,
        pausedUntil: null,
      });
      expect(failed.responseBody).toMatch(/^key=\[redacted\] é+$/);
      expect(Buffer.byteLength(failed.responseBody!)).toBeLessThanOrEqual(4096);
      expect(failed.responseHeaders).toMatchObject({ "x-echo-key": "[redacted]", "content-type": "text/plain" });
      expect(failed.responseHeaders).not.toHaveProperty("set-cookie");
      expect(Object.keys(failed.responseHeaders!).length).toBeLessThanOrEqual(20);
      // Nothing stored anywhere holds the key the receiver echoed.
      const sentKey = receivedOn("/answers")[0].headers["x-webhook-key"];
      const leaked = await db.raw<{ rows: { n: number }[] }>(
        `SELECT count(*)::int AS n FROM webhooks.attempts WHERE response_body LIKE ? OR response_headers::text LIKE ?`,
        [`%${sentKey}%`, `%${sentKey}%`],
      );
      expect(leaked.rows[0].n).toBe(0);
    });

    it("when a 429 with Retry-After is honoured, then the attempt says until when, and redelivery and recovery attempts say why they were made", async () => {
      const sub = await subscribe("/throttled");
      receiver.answerWith((_r, before) =>
        before === 0 ? { status: 429, afterMs: 0, headers: { "Retry-After": "1" } } : 200,
      );
      const since = new Date(Date.now() - 1000).toISOString();
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { n: ++seq } }]);
      const [delivery] = await until("the throttled delivery settling", () => deliveriesOf(sub.id), settled);
      const [paused, after] = delivery.attempts;
      expect(paused).toMatchObject({ number: 1, trigger: "scheduled", statusCode: 429 });
      expect(Date.parse(paused.pausedUntil!) - Date.parse(paused.attemptedAt)).toBeGreaterThanOrEqual(900);
      expect(after).toMatchObject({ number: 2, trigger: "retry", statusCode: 200, pausedUntil: null });
      expect(Date.parse(after.attemptedAt)).toBeGreaterThanOrEqual(Date.parse(paused.pausedUntil!) - 50);

      await act(replicaA, "webhooks.redeliver", { id: sub.id, deliveryId: delivery.id });
      await until(
        "the redelivery",
        () => deliveriesOf(sub.id),
        (d) => d[0].attempts.length === 3 && settled(d),
      );
      const recovery = await act<{ id: number }>(replicaB, "webhooks.recover", { id: sub.id, since, all: true });
      await until(
        "the recovery's attempt",
        () => deliveriesOf(sub.id),
        (d) => d[0].attempts.length === 4 && settled(d),
      );
      expect((await deliveriesOf(sub.id))[0].attempts.map((a) => [a.number, a.trigger])).toEqual([
        [1, "scheduled"],
        [2, "retry"],
        [3, "redelivery"],
        [4, "recovery"],
      ]);
      expect(recovery.status).toBe(202);
    });
  });

  describe("disabled means refused", () => {
    it("when a subscription is disabled, then its queued deliveries are cancelled, test, redeliver and recover are 409, and after /enable a recovery sends them", async () => {
      const sub = await subscribe("/gone");
      const since = new Date(Date.now() - 1000).toISOString();
      // Two deliveries queued for later (a retry an hour away), then a test the endpoint answers 410 Gone: disabled.
      for (const n of [1, 2]) {
        const eventId = `queued-${sub.id}-${n}`;
        await db("webhooks.events").insert({
          id: eventId,
          event: "sales_order_created",
          owner_client_id: partner.clientId,
          entity: "order",
          entity_id: n,
          occurred_at: db.fn.now(),
          body: JSON.stringify({ queued: n }),
        });
        await db("webhooks.deliveries").insert({
          subscription_id: sub.id,
          event_id: eventId,
          webhook_id: `msg_queued${sub.id}x${n}`,
          attempt_count: 1,
          next_attempt_at: db.raw("now() + interval '1 hour'"),
        });
      }
      receiver.answerWith((r) => (r.path === "/gone" ? 410 : 200));
      await act(replicaA, "webhooks.sendTest", { id: sub.id });
      const disabled = await until(
        "the subscription disabled",
        () => replicaA.call<{ status: string }>("webhooks.get", { id: sub.id }, partner),
        (s) => s.status === "disabled",
      );
      expect(disabled.status).toBe("disabled");
      const after = await until("the queued ones cancelled", () => deliveriesOf(sub.id), settled);
      expect(after.map((d) => [d.event, d.status]).sort()).toEqual([
        ["sales_order_created", "cancelled"],
        ["sales_order_created", "cancelled"],
        ["webhook_test", "failed"],
      ]);

      const refusal = { code: 409, type: "SUBSCRIPTION_DISABLED", data: { subscriptionId: sub.id } };
      await expect(act(replicaB, "webhooks.sendTest", { id: sub.id })).rejects.toMatchObject(refusal);
      await expect(act(replicaB, "webhooks.redeliver", { id: sub.id, deliveryId: after[0].id })).rejects.toMatchObject(
        refusal,
      );
      await expect(act(replicaA, "webhooks.recover", { id: sub.id, since })).rejects.toMatchObject({
        ...refusal,
        message: expect.stringContaining(`/api/v1/webhooks/${sub.id}/enable`),
      });
      // Nothing was queued by the refused requests.
      expect(await deliveriesOf(sub.id)).toHaveLength(3);
      expect(await db("webhooks.recoveries").where({ subscription_id: sub.id })).toEqual([]);

      receiver.answerWith(() => 200);
      await act(replicaA, "webhooks.enable", { id: sub.id });
      const before = receivedOn("/gone").length;
      const recovery = await act<{ id: number }>(replicaB, "webhooks.recover", { id: sub.id, since });
      expect(recovery.status).toBe(202);
      await until(
        "the recovered deliveries succeeding",
        () => deliveriesOf(sub.id),
        (d) => d.every((x) => x.status === "succeeded"),
      );
      expect(receivedOn("/gone").length - before).toBe(3);
    });
  });

  describe("idempotent actions", () => {
    it("when the same Idempotency-Key is sent again, on either replica, then the first answer is replayed and one delivery made; another request with it is 422", async () => {
      const sub = await subscribe("/keyed");
      const other = await subscribe("/keyed-other");
      const first = await act<DeliveryJson>(replicaA, "webhooks.sendTest", { id: sub.id }, "test-key-1");
      const again = await act<DeliveryJson>(replicaB, "webhooks.sendTest", { id: sub.id }, "test-key-1");
      expect(first).toMatchObject({ status: 202, replayed: false });
      expect(again).toMatchObject({ status: 202, replayed: true, result: { id: first.result.id } });
      await expect(act(replicaA, "webhooks.sendTest", { id: other.id }, "test-key-1")).rejects.toMatchObject({
        code: 422,
        type: "IDEMPOTENCY_KEY_REUSED",
      });
      await expect(
        act(replicaA, "webhooks.redeliver", { id: sub.id, deliveryId: first.result.id }, "test-key-1"),
      ).rejects.toMatchObject({ code: 422 });

      // Parallel requests with one key: one test is made; the others replay it or are told it is in flight.
      const outcomes = await Promise.allSettled(
        [replicaA, replicaB, replicaA, replicaB].map((r) =>
          act<DeliveryJson>(r, "webhooks.sendTest", { id: other.id }, "test-key-2"),
        ),
      );
      const ids = new Set(outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value.result.id] : [])));
      expect(ids.size).toBe(1);
      for (const o of outcomes)
        if (o.status === "rejected") expect(o.reason).toMatchObject({ code: 409, type: "IDEMPOTENCY_KEY_IN_FLIGHT" });
      await until(
        "both tests sent",
        () => deliveriesOf(other.id),
        (d) => d.length === 1 && settled(d),
      );
      expect((await deliveriesOf(sub.id)).length).toBe(1);

      const redelivered = await act(
        replicaA,
        "webhooks.redeliver",
        { id: sub.id, deliveryId: first.result.id },
        "rd-1",
      );
      expect(
        await act(replicaB, "webhooks.redeliver", { id: sub.id, deliveryId: first.result.id }, "rd-1"),
      ).toMatchObject({
        status: 202,
        replayed: true,
        result: redelivered.result as object,
      });
    });

    it("when a request with a key is still being acted on, then the same key is 409; a request that failed keeps nothing", async () => {
      const sub = await subscribe("/in-flight");
      await db("webhooks.idempotency_keys").insert({
        client_id: partner.clientId,
        key: "held-key",
        request_hash: requestHash({ action: "webhooks.sendTest", params: { id: sub.id } }),
        locked_until: db.raw("now() + interval '1 minute'"),
      });
      await expect(act(replicaA, "webhooks.sendTest", { id: sub.id }, "held-key")).rejects.toMatchObject({
        code: 409,
        type: "IDEMPOTENCY_KEY_IN_FLIGHT",
      });
      // Refused (no such delivery): the key is let go, and the same key then acts.
      await expect(
        act(replicaA, "webhooks.redeliver", { id: sub.id, deliveryId: 999_999_999 }, "failed-key"),
      ).rejects.toMatchObject({ code: 404 });
      expect(await db("webhooks.idempotency_keys").where({ key: "failed-key" })).toEqual([]);
      expect(await act(replicaA, "webhooks.sendTest", { id: sub.id }, "failed-key")).toMatchObject({ status: 202 });
    });

    it("when the same recovery is asked again within 60 s, even finished, then it is answered (200) instead of sending again; with a key, the first answer is replayed", async () => {
      const sub = await subscribe("/recover-twice");
      const since = new Date(Date.now() - 1000).toISOString();
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { n: ++seq } }]);
      await until(
        "the delivery succeeding",
        () => deliveriesOf(sub.id),
        (d) => d.length === 1 && settled(d),
      );
      const before = receivedOn("/recover-twice").length;

      // A double click on "all": four identical requests on two replicas make one recovery.
      const clicks = await Promise.all(
        [replicaA, replicaB, replicaA, replicaB].map((r) =>
          act<{ id: number; status: string }>(r, "webhooks.recover", { id: sub.id, since, all: true }),
        ),
      );
      expect(new Set(clicks.map((c) => c.result.id)).size).toBe(1);
      expect(clicks.map((c) => c.status).sort()).toEqual([200, 200, 200, 202]);
      const id = clicks[0].result.id;
      await until(
        "the recovery finishing",
        () => replicaA.call<{ status: string }>("webhooks.recovery", { id: sub.id, recoveryId: id }, partner),
        (r) => r.status === "done",
      );
      const late = await act<{ id: number; status: string }>(replicaB, "webhooks.recover", {
        id: sub.id,
        since,
        all: true,
      });
      expect(late).toMatchObject({ status: 200, result: { id, status: "done" } });
      await until("the recovered delivery succeeding", () => deliveriesOf(sub.id), settled);
      expect(receivedOn("/recover-twice").length - before).toBe(1);

      const keyed = await act<{ id: number }>(replicaA, "webhooks.recover", { id: sub.id, since }, "recover-key");
      const replay = await act<{ id: number }>(replicaB, "webhooks.recover", { id: sub.id, since }, "recover-key");
      expect(keyed).toMatchObject({
        status: 202,
        location: `/api/v1/webhooks/${sub.id}/recoveries/${keyed.result.id}`,
      });
      expect(replay).toMatchObject({
        status: 202,
        replayed: true,
        location: keyed.location,
        result: { id: keyed.result.id },
      });
    });
  });
});
