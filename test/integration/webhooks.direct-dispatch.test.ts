/**
 * A fresh event's deliveries are stored already claimed when this process's dispatcher has
 * slots for them, and sent at once (webhooks.fanout.ts, webhooks.dispatcher.ts `reserve`):
 * what the repository stores for them, that nobody else claims them, that a paused endpoint
 * waits anyway, and that the two paths together keep every endpoint's cap and send each
 * delivery once.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import * as repo from "../../services/webhooks/webhooks.deliveries.repository";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { numberedValidations } from "../helpers/numbered-events";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(90_000);

const BATCH = 4;
const PER_ENDPOINT = 3;
const ANSWER_AFTER_MS = 300;
const LEASE_MS = 60_000;

describe("webhooks: deliveries sent by the fan-out's own dispatcher", () => {
  let t: TestBroker;
  let source: EventSource;
  let db: Knex;
  let receiver: WebhookReceiver;
  const partner: Principal = {
    ...principal("partner", ["partner", "webhooks"]),
    webhookEvents: ["sales_order_validated"],
  };
  let subscriptionId: number;
  const domainEvent = numberedValidations("direct-test", () => partner.clientId);
  const deliveryOf = async (eventId: string) =>
    (await db.withSchema("webhooks").table("deliveries").where({ event_id: eventId }).first()) as {
      status: string;
      claim_token: string | null;
      next_attempt_at: Date;
    };

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_DISPATCH_BATCH: String(BATCH),
        WEBHOOK_ENDPOINT_CONCURRENCY: String(PER_ENDPOINT),
        WEBHOOK_DISPATCH_INTERVAL_MS: "100",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_direct_source");
    db = openDatabase(t.database.url);
    receiver = await startReceiver(() => ({ status: 200, afterMs: ANSWER_AFTER_MS }));
    subscriptionId = (
      await t.broker.call<{ id: number }, object>(
        "webhooks.subscribe",
        { event: "sales_order_validated", url: `${receiver.url}/hook` },
        { meta: { client: partner } },
      )
    ).id;
  });
  afterAll(async () => {
    await t?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  describe("what the fan-out stores", () => {
    it("when it reserved a subscription, then its delivery is stored claimed under a lease, with what sending needs, and no claim takes it", async () => {
      const event = domainEvent();
      const stored = await repo.insertEventDeliveries(db, event, JSON.stringify(event.data), [subscriptionId], {
        subscriptionIds: [subscriptionId],
        leaseMs: LEASE_MS,
      });

      expect(stored.created).toBe(1);
      expect(stored.claimed).toHaveLength(1);
      const [claimed] = stored.claimed;
      expect(claimed).toMatchObject({
        subscription_id: subscriptionId,
        event: "sales_order_validated",
        body: JSON.stringify(event.data),
        url: `${receiver.url}/hook`,
        endpoint: receiver.url,
        client_id: partner.clientId,
        owner_client_id: partner.clientId,
        attempt_count: 0,
      });
      expect(claimed.webhook_id).toMatch(/^msg_[0-9a-f]{32}$/);
      const row = await deliveryOf(event.id);
      expect(row).toMatchObject({ status: "pending", claim_token: claimed.claim_token });
      expect(row.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);

      // Not due for anyone while its lease runs.
      expect(
        (await repo.claimDue(db, 10, LEASE_MS, { perEndpoint: PER_ENDPOINT, limits: [] })).map((d) => d.id),
      ).not.toContain(claimed.id);
      await repo.cancelClaims(db, [claimed]);
    });

    it("when its endpoint is paused (Retry-After), then the delivery is stored due, not claimed", async () => {
      await db
        .withSchema("webhooks")
        .table("endpoint_pauses")
        .insert({ endpoint: receiver.url, until: new Date(Date.now() + 60_000) });
      try {
        const event = domainEvent();
        const stored = await repo.insertEventDeliveries(db, event, "{}", [subscriptionId], {
          subscriptionIds: [subscriptionId],
          leaseMs: LEASE_MS,
        });
        expect(stored).toEqual({ created: 1, claimed: [], behind: [] });
        expect(await deliveryOf(event.id)).toMatchObject({ status: "pending", claim_token: null });
        await db
          .withSchema("webhooks")
          .table("deliveries")
          .where({ event_id: event.id })
          .update({ status: "cancelled", next_attempt_at: null });
      } finally {
        await db.withSchema("webhooks").table("endpoint_pauses").where({ endpoint: receiver.url }).delete();
      }
    });

    it("when the event was stored before, then nothing new is stored or claimed", async () => {
      const event = domainEvent();
      const first = await repo.insertEventDeliveries(db, event, "{}", [subscriptionId]);
      expect(first).toEqual({ created: 1, claimed: [], behind: [] });
      expect(
        await repo.insertEventDeliveries(db, event, "{}", [subscriptionId], {
          subscriptionIds: [subscriptionId],
          leaseMs: LEASE_MS,
        }),
      ).toEqual({ created: 0, claimed: [], behind: [] });
      await db
        .withSchema("webhooks")
        .table("deliveries")
        .where({ event_id: event.id })
        .update({ status: "cancelled", next_attempt_at: null });
    });
  });

  it("when events come faster than the endpoint answers, then sent directly or claimed, each arrives once and the endpoint never has more than its cap in flight", async () => {
    const events = 20;
    const burst = () => receiver.received.filter((r) => "burst" in (JSON.parse(r.body) as object));
    await source.emit(
      Array.from({ length: events }, (_, i) => ({
        event: "sales_order_validated" as const,
        ownerClientId: partner.clientId,
        data: { burst: i },
      })),
    );
    await receiver.waitFor(
      () => burst().length >= events,
      60_000,
      () => `${burst().length} of ${events} received`,
    );

    const arrivals = burst()
      .map((r) => r.receivedAt)
      .sort((a, b) => a - b);
    expect(new Set(burst().map((r) => r.headers["webhook-id"])).size).toBe(events);
    expect(receiver.overlapping).toEqual([]);
    // Each answer takes ANSWER_AFTER_MS, so a request that arrived less than that before
    // another was still in flight when it arrived (a lower bound of the requests in flight).
    const inFlightAtArrival = arrivals.map(
      (at) => arrivals.filter((other) => other <= at && other > at - ANSWER_AFTER_MS).length,
    );
    expect(Math.max(...inFlightAtArrival)).toBeLessThanOrEqual(PER_ENDPOINT);
    // And the cap was used: the two paths did not serialise the endpoint.
    expect(Math.max(...inFlightAtArrival)).toBeGreaterThan(1);
  });
});
