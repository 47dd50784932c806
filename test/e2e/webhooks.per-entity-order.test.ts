/**
 * The proof of per-entity order (docs/webhooks.md, "Order"), end to end: two webhooks processes
 * (dist/, spawned) share the work over a private NATS JetStream and PostgreSQL, and a receiver
 * fails about 30 % of the attempts at random. Each order changes five times; each change is
 * written to an outbox in its own transaction, after the one before it, as the orders service
 * does (this process stands in for it: its relay publishes them), and its body carries the
 * order's `version`. The three order events go to three `per_entity` subscriptions on one URL:
 * for every order, the versions of the first successful receipts strictly increase, and none is
 * missing.
 *
 * Needs PostgreSQL (TEST_DATABASE_URL or testcontainers) and nats-server; `npm test` builds dist/.
 */
import type { Principal } from "../../shared/security/auth";
import type { EventName } from "../../shared/messaging/events";
import { principal } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { requires } from "../helpers/prerequisites";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";
import { startWebhooksWorld, type WebhooksWorld } from "../helpers/webhooks-world";

jest.setTimeout(180_000);

const ORDERS = 40;
/** Each order's changes, in order: its version is the place in this list, from 1. */
const CHANGES: EventName[] = [
  "sales_order_created",
  "sales_order_validated",
  "sales_order_cancelled",
  "sales_order_validated",
  "sales_order_cancelled",
];
const FAILURE_RATE = 0.3;

const WEBHOOKS_ENV = {
  WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
  // Short and long enough that no delivery exhausts it at 30 % failures (0.3^16).
  WEBHOOK_RETRY_SCHEDULE: "0.1,0.2,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3",
  WEBHOOK_DISPATCH_INTERVAL_MS: "100",
  // A stalled process on a busy two-core machine can take a second or two to fan an event out.
  WEBHOOK_ORDERING_HOLD: "3s",
};

const describeWithServers = requires(["postgres", "nats-server"]).describe;

describeWithServers("webhooks: per-entity order under random failures (two webhooks processes)", () => {
  let world: WebhooksWorld;
  let receiver: WebhookReceiver;
  const client: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...CHANGES] };

  beforeAll(async () => {
    world = await startWebhooksWorld("order-source");
    await world.startWebhooks(["webhooks-a", "webhooks-b"], WEBHOOKS_ENV);
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await world?.dispose();
    await receiver?.close();
  });

  it("when every order changes five times and 30 % of attempts fail, then each order's versions arrive (first successful receipt of each) strictly increasing, none missing", async () => {
    for (const event of new Set(CHANGES)) {
      await world.t.broker.call(
        "webhooks.subscribe",
        { event, url: `${receiver.url}/orders`, ordering: "per_entity" },
        { meta: { client } },
      );
    }
    // The first successful receipt of each webhook-id, in the order they came.
    const firstSuccesses: { order: number; version: number }[] = [];
    const succeeded = new Set<string>();
    let failed = 0;
    receiver.answerWith((request) => {
      if (Math.random() < FAILURE_RATE) {
        failed += 1;
        return 500;
      }
      const id = request.headers["webhook-id"];
      if (!succeeded.has(id)) {
        succeeded.add(id);
        const body = JSON.parse(request.body) as { id: number; version: number };
        firstSuccesses.push({ order: body.id, version: body.version });
      }
      return 200;
    });

    // Each change in its own transaction once the one before it committed, as orders.lifecycle.ts
    // writes them; all orders change at once, so their lines run side by side.
    for (const [i, event] of CHANGES.entries()) {
      await world.source.emit(
        Array.from({ length: ORDERS }, (_, k) => ({
          event,
          ownerClientId: client.clientId,
          entityId: k + 1,
          data: { id: k + 1, version: i + 1, status: event },
        })),
      );
    }
    const expected = ORDERS * CHANGES.length;
    await receiver.waitFor(
      () => firstSuccesses.length >= expected,
      EVENTUALLY_MS * 4,
      () => `${firstSuccesses.length} of ${expected} deliveries succeeded`,
    );

    const versionsByOrder = new Map<number, number[]>();
    for (const { order, version } of firstSuccesses)
      versionsByOrder.set(order, [...(versionsByOrder.get(order) ?? []), version]);
    const everyOrder = Array.from({ length: ORDERS }, (_, k) => k + 1);
    const outOfOrder = everyOrder.filter(
      (order) => (versionsByOrder.get(order) ?? []).join() !== CHANGES.map((_, i) => i + 1).join(),
    );
    expect(outOfOrder.map((order) => ({ order, versions: versionsByOrder.get(order) }))).toEqual([]);
    // The failures were real.
    expect(failed).toBeGreaterThan(expected * FAILURE_RATE * 0.5);
    // Parallel across orders: while one order waited, others were received (not one order at a time).
    const ordersAmongFirst = new Set(firstSuccesses.slice(0, ORDERS).map((s) => s.order));
    expect(ordersAmongFirst.size).toBeGreaterThan(ORDERS / 2);
  });
});
