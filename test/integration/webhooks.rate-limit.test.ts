/**
 * Issue 21, part 5: a subscription's `rateLimit` holds across webhooks replicas within 10 %. Two
 * webhooks brokers (each with its dispatcher and its own view of the limits) share one database;
 * a backlog of deliveries to one rate-limited subscription arrives no faster than the limit in
 * any second, yet at the limit. The end-to-end test does the same with two processes over NATS
 * (test/e2e/webhooks.rate-limit.test.ts).
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import type { Principal } from "../../shared/security/auth";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { busiestSecond, rateFigures } from "../helpers/rate-figures";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(60_000);

const RATE = 20;
const EVENTS_SENT = 120;
const ENV = {
  WEBHOOK_DISPATCH_INTERVAL_MS: "100",
  WEBHOOK_DISPATCH_BATCH: "50",
  OUTBOX_RELAY_INTERVAL_MS: "50",
};

describe("webhooks: a subscription's rate limit, across two replicas", () => {
  let replicaA: TestBroker;
  let replicaB: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const owner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };

  beforeAll(async () => {
    replicaA = await startTestBroker({ services: ["webhooks"], env: ENV });
    replicaB = await startTestBroker({ services: ["webhooks"], env: ENV, database: replicaA.database });
    source = await addEventSource(replicaA.broker, "webhooks_rate_limit_source");
    receiver = await startReceiver(() => ({ status: 200, afterMs: 5 }));
    db = openDatabase(replicaA.database.url);
  });
  afterAll(async () => {
    await replicaB?.stop();
    await replicaA?.stop();
    await receiver?.close();
    await db?.destroy();
  });

  it(`when a subscription accepts ${RATE} deliveries a second and ${EVENTS_SENT} are due, then no second holds more than 10 % over the limit and the limit is reached`, async () => {
    const { id } = await replicaA.call<{ id: number }>(
      "webhooks.subscribe",
      { event: "sales_order_created", url: `${receiver.url}/limited` },
      owner,
    );
    // Set through the other replica: the one that fans out learns it within a second; this test waits that second.
    const limited = await replicaB.call<{ rateLimit: number }>("webhooks.update", { id, rateLimit: RATE }, owner);
    expect(limited.rateLimit).toBe(RATE);
    await new Promise((r) => setTimeout(r, 1_100));

    await source.emit(
      Array.from({ length: EVENTS_SENT }, (_, i) => ({
        event: "sales_order_created" as const,
        ownerClientId: owner.clientId,
        data: { seq: i },
      })),
    );
    await receiver.waitFor((r) => r.length >= EVENTS_SENT, 30_000);
    expect(new Set(receiver.received.map((r) => JSON.parse(r.body).seq)).size).toBe(EVENTS_SENT);

    // What the two replicas did: when each attempt began, by their clocks.
    const sent = (await db
      .withSchema("webhooks")
      .table("attempts as a")
      .join("deliveries as d", "d.id", "a.delivery_id")
      .where("d.subscription_id", id)
      .pluck("a.attempted_at")) as Date[];
    const sending = {
      ...rateFigures(sent.map((d) => d.getTime())),
      busiestSecond: busiestSecond(sent.map((d) => d.getTime())),
    };
    // The figures ride along, so that a failure shows them.
    expect({
      sending,
      noSecondOver: sending.busiestSecond <= RATE * 1.1,
      atTheLimit: sending.perSecond >= RATE * 0.9 && sending.perSecond <= RATE * 1.1,
    }).toEqual({ sending, noSecondOver: true, atTheLimit: true });

    // What the receiver counted: the same rate over the run. (Its busiest second also depends on
    // when this busy test process gets to read its sockets; the end-to-end test counts that too.)
    const arrivals = receiver.received.map((r) => r.receivedAt);
    const receiving = rateFigures(arrivals);
    expect({ receiving, atTheLimit: receiving.perSecond >= RATE * 0.9 && receiving.perSecond <= RATE * 1.1 }).toEqual({
      receiving,
      atTheLimit: true,
    });
  });
});
