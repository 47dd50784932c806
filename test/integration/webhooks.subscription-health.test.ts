/**
 * Endpoint health (docs/webhooks.md, "Endpoint health"): 410 disables at once, 429/503 with
 * Retry-After hold the endpoint without spending a retry, a subscription failing for
 * WEBHOOK_DISABLE_AFTER is disabled, its owner is told on its other subscriptions, a disabled
 * subscription receives nothing until enabled, and its figures show in /stats and /metrics.
 */
import type { Knex } from "knex";
import type { Principal, RequestMeta } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { renderMetrics } from "../../shared/observability/metrics";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface SubscriptionJson {
  id: number;
  status: "active" | "disabled";
  disabledAt: string | null;
  disabledReason: string | null;
}

interface DeliveryJson {
  status: string;
  attempts: { statusCode: number | null; attemptedAt: string }[];
}

const newPartner = (): Principal => ({
  ...principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]),
  webhookEvents: [...EVENTS],
});

const RETRY_AFTER_SECONDS = 2;

describe("webhook endpoint health", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  let seq = 0;

  const call = <T>(action: string, params: object, as: Principal) =>
    t.broker.call<T, object>(action, params, { meta: { client: as } satisfies RequestMeta });
  const subscribe = (as: Principal, event: string, url: string) =>
    call<SubscriptionJson>("webhooks.subscribe", { event, url }, as);
  const emit = async (owner: Principal) => {
    seq += 1;
    await source.emit([{ event: "sales_order_created", ownerClientId: owner.clientId, data: { seq } }]);
    return seq;
  };
  const bodiesOn = (r: WebhookReceiver, path: string) =>
    r.received.filter((w) => w.path === path).map((w) => JSON.parse(w.body) as Record<string, unknown>);
  const deliveriesOf = async (as: Principal, id: number) =>
    (await call<{ items: DeliveryJson[] }>("webhooks.deliveries", { id }, as)).items;
  /** Outcomes are recorded in batches a few tens of milliseconds after the answer (webhooks.outcome-recorder.ts). */
  const attemptRecorded = async (as: Principal, id: number) => {
    const deadline = Date.now() + EVENTUALLY_MS;
    while ((await deliveriesOf(as, id)).every((d) => d.attempts.length === 0)) {
      if (Date.now() > deadline) throw new Error(`no attempt of subscription ${id} recorded`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const settledDeliveriesOf = async (as: Principal, id: number) => {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const items = await deliveriesOf(as, id);
      if (items.every((d) => d.status !== "pending") || Date.now() > deadline) return items;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  /** The subscription's stats once `ready` holds of them (or the last read, at the deadline). */
  const statsOnce = async (as: Principal, id: number, ready: (stats: Record<string, unknown>) => boolean) => {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const stats = await call<Record<string, unknown>>("webhooks.stats", { id }, as);
      if (ready(stats) || Date.now() > deadline) return stats;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_RETRY_SCHEDULE: Array(40).fill("0.1").join(","),
        WEBHOOK_DISABLE_AFTER: "2s",
        WEBHOOK_RETRY_AFTER_MAX: "1h",
        // An answer always counts as one, however busy the machine: no attempt here is meant to time out.
        WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_health_source");
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("when an endpoint answers 410 Gone, then its subscription is disabled at once, its owner is told on its other subscription, it receives nothing more until enabled", async () => {
    const owner = newPartner();
    receiver.answerWith((r) => (r.path === "/gone" ? 410 : 200));
    const gone = await subscribe(owner, "sales_order_created", `${receiver.url}/gone`);
    const told = await subscribe(owner, "webhook_endpoint_disabled", `${receiver.url}/told`);
    const healthy = await subscribe(owner, "sales_order_created", `${receiver.url}/healthy`);

    await emit(owner);
    await receiver.waitFor(() => bodiesOn(receiver, "/told").length > 0, EVENTUALLY_MS);

    const [notice] = bodiesOn(receiver, "/told");
    expect(notice).toMatchObject({ id: gone.id, status: "disabled", disabledReason: expect.stringContaining("410") });
    expect(receiver.received.filter((r) => r.path === "/told")[0].headers["x-webhook-event"]).toBe(
      "webhook_endpoint_disabled",
    );
    const read = await call<SubscriptionJson>("webhooks.get", { id: gone.id }, owner);
    expect(read).toMatchObject({ status: "disabled", disabledAt: expect.any(String) });
    const [delivery] = await deliveriesOf(owner, gone.id);
    expect({ status: delivery.status, codes: delivery.attempts.map((a) => a.statusCode) }).toEqual({
      status: "failed",
      codes: [410],
    });
    expect((await call<SubscriptionJson>("webhooks.get", { id: told.id }, owner)).status).toBe("active");

    // Fan-out skips it: the healthy subscription gets the next event, the disabled one gets no delivery.
    const next = await emit(owner);
    await receiver.waitFor(() => bodiesOn(receiver, "/healthy").some((b) => b.seq === next), EVENTUALLY_MS);
    expect(await deliveriesOf(owner, gone.id)).toHaveLength(1);
    expect(bodiesOn(receiver, "/gone")).toHaveLength(1);

    const enabled = await call<SubscriptionJson>("webhooks.enable", { id: gone.id }, owner);
    expect(enabled).toMatchObject({ status: "active", disabledAt: null, disabledReason: null });
    receiver.answerWith(() => 200);
    const after = await emit(owner);
    await receiver.waitFor(() => bodiesOn(receiver, "/gone").some((b) => b.seq === after), EVENTUALLY_MS);
    await expect(call("webhooks.enable", { id: gone.id }, newPartner())).rejects.toMatchObject({ code: 404 });
    void healthy;
  });

  it("when an endpoint answers 429 with Retry-After, then its endpoint waits that long for every subscription to it, and the attempt spends no retry", async () => {
    const busy = await startReceiver();
    try {
      const owner = newPartner();
      let throttled = false;
      busy.answerWith((r) => {
        if (r.path !== "/busy" || throttled) return 200;
        throttled = true;
        return { status: 429, afterMs: 0, headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } };
      });
      const first = await subscribe(owner, "sales_order_created", `${busy.url}/busy`);
      await emit(owner);
      await busy.waitFor((all) => all.length === 1, EVENTUALLY_MS);
      const throttledAt = busy.received[0].receivedAt;
      // The pause holds from the moment the 429 is recorded; on a busy machine the next event could
      // otherwise reach another of the endpoint's slots first.
      await attemptRecorded(owner, first.id);

      // Another subscription to the same endpoint (origin) waits too.
      const sibling = await subscribe(owner, "sales_order_created", `${busy.url}/sibling`);
      await emit(owner);
      await busy.waitFor(
        (all) => all.filter((r) => r.path === "/busy").length === 3 && all.some((r) => r.path === "/sibling"),
        EVENTUALLY_MS,
      );
      for (const later of busy.received.slice(1))
        expect(later.receivedAt - throttledAt).toBeGreaterThanOrEqual(RETRY_AFTER_SECONDS * 1000 - 50);

      const [retried] = await settledDeliveriesOf(owner, first.id);
      expect({ status: retried.status, codes: retried.attempts.map((a) => a.statusCode) }).toEqual({
        status: "succeeded",
        codes: [429, 200],
      });
      const counts = await db
        .withSchema("webhooks")
        .table("deliveries")
        .where({ subscription_id: first.id })
        .orderBy("id")
        .pluck("attempt_count");
      expect(counts).toEqual([1, 1]);

      // A batch's health is noted just after its attempts are recorded (webhooks.subscription-health.ts).
      const stats = await statsOnce(owner, first.id, (s) => s.lastSuccessAt !== null);
      expect(stats).toMatchObject({
        id: first.id,
        status: "active",
        backlog: 0,
        failingSince: null,
        lastSuccessAt: expect.any(String),
        lastFailure: { statusCode: 429, at: expect.any(String) },
        window: {
          hours: 24,
          attempts: 3,
          succeeded: 2,
          successRate: 2 / 3,
          latencyMs: { p50: expect.any(Number), p95: expect.any(Number), max: expect.any(Number) },
        },
      });
      void sibling;
    } finally {
      await busy.close();
    }
  });

  it("when every attempt fails for WEBHOOK_DISABLE_AFTER, then the subscription is disabled, its queued deliveries are cancelled (issue 21: kept in the log, recoverable), and /metrics counts it", async () => {
    const owner = newPartner();
    receiver.answerWith((r) => (r.path === "/down" ? 500 : 200));
    const down = await subscribe(owner, "sales_order_created", `${receiver.url}/down`);
    await subscribe(owner, "webhook_endpoint_disabled", `${receiver.url}/told-down`);

    await emit(owner);
    await emit(owner);
    await receiver.waitFor(() => bodiesOn(receiver, "/told-down").length > 0, EVENTUALLY_MS);

    // Disabled once its failures had lasted WEBHOOK_DISABLE_AFTER, by the service's own clock: the
    // receiver's arrival times shrink that span whenever a busy machine reads the first request late.
    const firstAttemptAt = Math.min(
      ...(await deliveriesOf(owner, down.id)).flatMap((d) => d.attempts.map((a) => Date.parse(a.attemptedAt))),
    );
    const { disabledAt } = await call<SubscriptionJson>("webhooks.get", { id: down.id }, owner);
    expect(Date.parse(disabledAt ?? "") - firstAttemptAt).toBeGreaterThanOrEqual(2_000 - 100);
    expect(bodiesOn(receiver, "/told-down")).toEqual([
      expect.objectContaining({
        id: down.id,
        status: "disabled",
        disabledReason: expect.stringContaining("WEBHOOK_DISABLE_AFTER"),
      }),
    ]);
    const deliveries = await deliveriesOf(owner, down.id);
    expect(deliveries.map((d) => d.status)).toEqual(["cancelled", "cancelled"]);

    const stats = await call<Record<string, unknown>>("webhooks.stats", { id: down.id }, owner);
    expect(stats).toMatchObject({
      status: "disabled",
      backlog: 0,
      lastSuccessAt: null,
      failingSince: expect.any(String),
      lastFailure: { statusCode: 500 },
      window: { successRate: 0 },
    });

    const { body } = await renderMetrics(t.broker);
    const disabled = Number(/^webhook_subscriptions\{state="disabled"\} (\d+)/m.exec(body)?.[1]);
    expect(disabled).toBeGreaterThanOrEqual(1);
    expect(body).toMatch(/^webhook_deliveries_pending \d+/m);
    expect(body).not.toMatch(/subscription_id|webhook_subscription_failing_seconds\{[^}]*id=/);
  });
});
