/**
 * Per-entity order (docs/webhooks.md, "Order"; webhooks.ordering.ts): the claim and the
 * fan-out's direct hand-off take a `per_entity` delivery only once every earlier delivery of its
 * line (the same entity, to the client's `per_entity` subscriptions on the same URL) settled;
 * settling in any way releases the next; other entities, `none` subscriptions, redeliveries and
 * recoveries are not held. The claims are made here, by the repository: the service's own
 * dispatcher looks only once an hour, so it takes nothing from under the test.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import type { DomainEvent, EventName } from "../../shared/messaging/events";
import { recordAttempts } from "../../services/webhooks/webhooks.attempts.repository";
import type { DeliveryUpdate } from "../../services/webhooks/webhooks.retry-policy";
import * as repo from "../../services/webhooks/webhooks.deliveries.repository";
import type { ClaimedDelivery } from "../../services/webhooks/webhooks.deliveries.repository";
import { releaseIfFirstInLine, releaseNextOf, type LineWaits } from "../../services/webhooks/webhooks.ordering";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { requires } from "../helpers/prerequisites";
import { until } from "../helpers/relay-harness";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const LEASE_MS = 60_000;
/** A transaction left open while other statements run: PGlite (the embedded mode) has one connection. */
const twoConnections = requires(["postgres"]);
const ALLOWANCE = { perEndpoint: 100, limits: [] };
const HOLD_MS = 60_000;

interface Stored {
  id: number;
  eventId: string;
}

describe("webhooks: per-entity order of deliveries", () => {
  let t: TestBroker;
  let db: Knex;
  let receiver: WebhookReceiver;
  const ORDER_EVENTS: EventName[] = ["sales_order_created", "sales_order_validated", "sales_order_cancelled"];
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: ORDER_EVENTS };
  /** per_entity, all three on one URL: one line per order. */
  const line: Record<string, number> = {};
  /** ordering none, on another URL. */
  let unordered: number;
  let sequence = 1_000;
  let orderId = 0;
  const W = () => db.withSchema("webhooks");

  const subscribe = (event: EventName, url: string, ordering?: string) =>
    t.call<{ id: number; ordering: string }>(
      "webhooks.subscribe",
      { event, url, ...(ordering ? { ordering } : {}) },
      partner,
    );
  const eventOf = (event: EventName, entityId: number, seq = ++sequence): DomainEvent => ({
    id: `orders-${seq}`,
    event,
    ownerClientId: partner.clientId,
    entity: "order",
    entityId,
    occurredAt: new Date().toISOString(),
    data: { id: entityId, seq },
  });
  /**
   * Stores the event's delivery to `subscriptionId`, due at once (no hold) unless told; behind an
   * unsettled earlier one it waits only if told (`behindMs`), so that these tests may settle
   * deliveries by hand.
   */
  const store = async (e: DomainEvent, subscriptionId: number, holdMs = 0, behindMs = 0): Promise<Stored> => {
    const waits: LineWaits = { holdMs, behindMs };
    const stored = await repo.insertEventDeliveries(db, e, JSON.stringify(e.data), [subscriptionId], undefined, waits);
    expect(stored.created).toBe(1);
    const row = (await W().table("deliveries").where({ event_id: e.id, subscription_id: subscriptionId }).first()) as {
      id: string;
    };
    return { id: Number(row.id), eventId: e.id };
  };
  /** What a claim takes of these deliveries now. */
  const claimOf = async (...of: Stored[]): Promise<Stored[]> => {
    const claimed = new Set((await repo.claimDue(db, 100, LEASE_MS, ALLOWANCE)).map((d) => Number(d.id)));
    return of.filter((d) => claimed.has(d.id));
  };
  const settle = (d: Stored, status: string) =>
    W().table("deliveries").where({ id: d.id }).update({ status, next_attempt_at: null, claim_token: null });
  /** After a failed attempt: pending, its retry due later. */
  const retryLater = (d: Stored) =>
    W()
      .table("deliveries")
      .where({ id: d.id })
      .update({ claim_token: null, next_attempt_at: new Date(Date.now() + 600_000), attempt_count: 1 });
  const newOrder = () => ++orderId;
  /** Records the attempt of a claimed delivery in `q` (the database, or a transaction left open). */
  const record = (q: Knex, claim: ClaimedDelivery, next: DeliveryUpdate, statusCode: number) =>
    recordAttempts(q, [
      {
        claim,
        attempt: { attemptedAt: new Date(), statusCode, error: null, durationMs: 1, trigger: "scheduled" },
        next,
      },
    ]);
  const claimOne = async (d: Stored) => {
    const [claim] = (await repo.claimDue(db, 100, LEASE_MS, ALLOWANCE)).filter((c) => Number(c.id) === d.id);
    expect(claim).toBeDefined();
    return claim;
  };
  /**
   * Claims it and records an attempt, then (settled) releases the next of its line, as the
   * dispatcher's outcome recorder does (`holdMs`: WEBHOOK_ORDERING_HOLD).
   */
  const attemptOf = async (d: Stored, next: DeliveryUpdate, statusCode: number, holdMs = 0) => {
    await record(db, await claimOne(d), next, statusCode);
    if (next.status !== "pending") await releaseNextOf(db, [d.id], holdMs);
  };
  /** A failed attempt whose retry is 10 minutes away. */
  const failAndRetryLater = (d: Stored) => attemptOf(d, { status: "pending", retryInMs: 600_000 }, 500);
  /** A successful attempt. */
  const succeed = (d: Stored, holdMs = 0) => attemptOf(d, { status: "succeeded", retryInMs: null }, 200, holdMs);
  const dueAt = async (d: Stored) =>
    (await W().table("deliveries").where({ id: d.id }).first<{ next_attempt_at: Date }>("next_attempt_at"))
      .next_attempt_at;

  beforeAll(async () => {
    t = await startTestBroker({ services: ["webhooks"], env: { WEBHOOK_DISPATCH_INTERVAL_MS: "3600000" } });
    db = openDatabase(t.database.url);
    receiver = await startReceiver();
    for (const event of ORDER_EVENTS) line[event] = (await subscribe(event, `${receiver.url}/line`, "per_entity")).id;
    unordered = (await subscribe("sales_order_validated", `${receiver.url}/unordered`)).id;
  });
  afterEach(async () => {
    // Nothing left due for the next test.
    await W().table("deliveries").where({ status: "pending" }).update({ status: "cancelled", next_attempt_at: null });
  });
  afterAll(async () => {
    await t?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  describe("the subscription's `ordering`", () => {
    it("when subscribing without it, then it is `none`; with it, then it is kept and shown", async () => {
      expect((await t.call<{ ordering: string }>("webhooks.get", { id: unordered }, partner)).ordering).toBe("none");
      expect(
        (await t.call<{ ordering: string }>("webhooks.get", { id: line.sales_order_created }, partner)).ordering,
      ).toBe("per_entity");
    });

    it("when PUT names another ordering than the existing subscription's, then 409 names `ordering`; PATCH changes it", async () => {
      await expect(subscribe("sales_order_validated", `${receiver.url}/unordered`, "per_entity")).rejects.toMatchObject(
        { code: 409, data: { path: "ordering", id: unordered } },
      );
      await expect(subscribe("sales_order_validated", `${receiver.url}/unordered`, "none")).resolves.toMatchObject({
        id: unordered,
      });
      const patched = await t.call<{ ordering: string }>(
        "webhooks.update",
        { id: unordered, ordering: "per_entity" },
        partner,
      );
      expect(patched.ordering).toBe("per_entity");
      await t.call("webhooks.update", { id: unordered, ordering: "none" }, partner);
    });

    it("when it is no ordering at all, then 422 names it", async () => {
      await expect(t.call("webhooks.update", { id: unordered, ordering: "fifo" }, partner)).rejects.toMatchObject({
        code: 422,
      });
    });
  });

  describe("claims", () => {
    it("when an earlier delivery of the entity is pending, being sent or retrying, then a later one (to another subscription of the line) is not claimed; once it succeeded, the later one is", async () => {
      const order = newOrder();
      const created = await store(eventOf("sales_order_created", order), line.sales_order_created);
      const validated = await store(eventOf("sales_order_validated", order), line.sales_order_validated);

      expect(await claimOf(created, validated)).toEqual([created]);
      // Being sent (claimed, leased): still unsettled.
      expect(await claimOf(validated)).toEqual([]);
      await retryLater(created);
      expect(await claimOf(created, validated)).toEqual([]);
      await settle(created, "succeeded");
      expect(await claimOf(validated)).toEqual([validated]);
    });

    it.each(["failed", "refused", "cancelled"])(
      "when the earlier delivery ends %s, then it releases the next",
      async (status) => {
        const order = newOrder();
        const first = await store(eventOf("sales_order_validated", order), line.sales_order_validated);
        const second = await store(eventOf("sales_order_cancelled", order), line.sales_order_cancelled);
        expect(await claimOf(first, second)).toEqual([first]);
        await settle(first, status);
        expect(await claimOf(second)).toEqual([second]);
      },
    );

    it("when one entity's line waits, then other entities' deliveries are claimed in parallel", async () => {
      const [a, b, c] = [newOrder(), newOrder(), newOrder()];
      const heads = [
        await store(eventOf("sales_order_created", a), line.sales_order_created),
        await store(eventOf("sales_order_created", b), line.sales_order_created),
        await store(eventOf("sales_order_created", c), line.sales_order_created),
      ];
      const behind = await store(eventOf("sales_order_validated", a), line.sales_order_validated);
      expect(await claimOf(...heads, behind)).toEqual(heads);
    });

    it("when the subscription's ordering is `none`, then one entity's deliveries are claimed together, and they hold up nobody", async () => {
      const order = newOrder();
      const first = await store(eventOf("sales_order_validated", order), unordered);
      const second = await store(eventOf("sales_order_validated", order), unordered);
      const inLine = await store(eventOf("sales_order_cancelled", order), line.sales_order_cancelled);
      expect(await claimOf(first, second, inLine)).toEqual([first, second, inLine]);
    });

    it("when an earlier event of the entity is stored after a later one that is still pending, then the earlier one goes first", async () => {
      const order = newOrder();
      const earlier = eventOf("sales_order_validated", order);
      const later = await store(eventOf("sales_order_cancelled", order), line.sales_order_cancelled, HOLD_MS);
      const early = await store(earlier, line.sales_order_validated);
      // The later one is held (WEBHOOK_ORDERING_HOLD) and, once due, waits for the earlier one.
      expect(await claimOf(early, later)).toEqual([early]);
      await W().table("deliveries").where({ id: later.id }).update({ next_attempt_at: new Date() });
      expect(await claimOf(later)).toEqual([]);
      await settle(early, "succeeded");
      expect(await claimOf(later)).toEqual([later]);
    });

    it("when an old delivery is redelivered, then it is sent at once and holds up no newer one of its entity", async () => {
      const order = newOrder();
      const old = await store(eventOf("sales_order_created", order), line.sales_order_created);
      await settle(old, "succeeded");
      const pending = await store(eventOf("sales_order_validated", order), line.sales_order_validated);
      expect(await claimOf(pending)).toEqual([pending]);
      expect(await repo.scheduleAgain(db, line.sales_order_created, old.id)).toBe(true);
      const newer = await store(eventOf("sales_order_cancelled", order), line.sales_order_cancelled);
      // `newer` waits for `pending` (being sent), in line before it, not for the redelivered one...
      expect(await claimOf(old, newer)).toEqual([old]);
      await settle(pending, "succeeded");
      // ...which, still being sent, does not hold it up.
      expect(await claimOf(newer)).toEqual([newer]);
    });

    it("when an old delivery is recovered, then it leaves its line as a redelivered one does", async () => {
      const since = new Date(Date.now() - 1_000).toISOString();
      const old = await store(eventOf("sales_order_validated", newOrder()), line.sales_order_validated);
      await settle(old, "failed");
      await t.call("webhooks.recover", { id: line.sales_order_validated, since }, partner);
      const outOfLine = () =>
        W()
          .table("deliveries")
          .where({ id: old.id })
          .first<{ status: string; sequence: string | null }>("status", "sequence");
      await until(async () => (await outOfLine()).status !== "failed", "the recovery queued it again");
      expect(await outOfLine()).toEqual({ status: expect.stringMatching(/^(pending|succeeded)$/), sequence: null });
    });

    it("when an earlier delivery's failure schedules a retry, then the later ones of its line, stored before or after, are due no sooner than that retry", async () => {
      const order = newOrder();
      const head = await store(eventOf("sales_order_created", order), line.sales_order_created);
      const before = await store(eventOf("sales_order_validated", order), line.sales_order_validated);
      await failAndRetryLater(head);
      const after = await store(eventOf("sales_order_cancelled", order), line.sales_order_cancelled);
      const retryAt = await dueAt(head);
      expect(retryAt.getTime()).toBeGreaterThan(Date.now() + 500_000);
      expect(await dueAt(before)).toEqual(retryAt);
      expect(await dueAt(after)).toEqual(retryAt);
      // Another order's line is not moved.
      const other = await store(eventOf("sales_order_created", newOrder()), line.sales_order_created);
      expect(await claimOf(head, before, after, other)).toEqual([other]);
    });

    it("when the earlier delivery waiting for its retry is redelivered, then the later ones deferred to that retry are due at once", async () => {
      const order = newOrder();
      const head = await store(eventOf("sales_order_created", order), line.sales_order_created);
      const behind = await store(eventOf("sales_order_validated", order), line.sales_order_validated);
      await failAndRetryLater(head);
      expect(await claimOf(head, behind)).toEqual([]);
      expect(await repo.scheduleAgain(db, line.sales_order_created, head.id)).toBe(true);
      expect(await claimOf(head, behind)).toEqual([head, behind]);
    });

    it("when later deliveries are stored behind an unsettled one, then they wait up to the lease, out of the claims' way, and each one that settles releases only the next", async () => {
      const order = newOrder();
      const head = await store(eventOf("sales_order_created", order), line.sales_order_created, 0, LEASE_MS);
      const second = await store(eventOf("sales_order_validated", order), line.sales_order_validated, 0, LEASE_MS);
      const third = await store(eventOf("sales_order_cancelled", order), line.sales_order_cancelled, 0, LEASE_MS);
      expect((await dueAt(head)).getTime()).toBeLessThanOrEqual(Date.now());
      for (const behind of [second, third])
        expect((await dueAt(behind)).getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);

      await succeed(head);
      expect((await dueAt(second)).getTime()).toBeLessThanOrEqual(Date.now());
      expect((await dueAt(third)).getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);
      await succeed(second);
      expect(await claimOf(third)).toEqual([third]);
    });

    /** A new order's first delivery, claimed: being sent. */
    const headBeingSent = async () => {
      const order = newOrder();
      const head = await store(eventOf("sales_order_created", order), line.sales_order_created, 0, LEASE_MS);
      return { order, head, claim: await claimOne(head) };
    };

    twoConnections.it(
      "when the next one is stored while the one before settles, unseen by its release, then the release after the commit finds it",
      async () => {
        const { order, head, claim } = await headBeingSent();
        let next: Stored | undefined;
        await db.transaction(async (trx) => {
          await record(trx, claim, { status: "succeeded", retryInMs: null }, 200);
          // Stored meanwhile: the head is not settled yet as the store sees it.
          next = await store(eventOf("sales_order_validated", order), line.sales_order_validated, 0, LEASE_MS);
          expect((await dueAt(next)).getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);
        });
        await releaseNextOf(db, [head.id], 0);
        expect(await claimOf(next!)).toEqual([next]);
      },
    );

    twoConnections.it(
      "when the one before settles while the next one is stored, unseen by the store, then the stored one releases itself after its commit",
      async () => {
        const { order, head, claim } = await headBeingSent();
        const e = eventOf("sales_order_validated", order);
        let behind: number[] = [];
        await db.transaction(async (trx) => {
          behind = (
            await repo.insertEventDeliveries(trx, e, "{}", [line.sales_order_validated], undefined, {
              holdMs: 0,
              behindMs: LEASE_MS,
            })
          ).behind;
          // Settled meanwhile, its release unable to see the one not yet committed.
          await record(db, claim, { status: "succeeded", retryInMs: null }, 200);
          await releaseNextOf(db, [head.id], 0);
        });
        const row = await W().table("deliveries").where({ event_id: e.id }).first<{ id: string }>("id");
        const next: Stored = { id: Number(row.id), eventId: e.id };
        expect(behind).toEqual([next.id]);
        expect((await dueAt(next)).getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);
        await releaseIfFirstInLine(db, behind, 0);
        expect(await claimOf(next)).toEqual([next]);
      },
    );

    twoConnections.it(
      "when a release is ended to break a deadlock, then it is sent again and releases its lines",
      async () => {
        // Four lines whose next deliveries were stored in another order than their heads, the
        // lowest one behind neither the first head nor the last: a plan that walks the settled
        // heads forwards or backwards locks another next one before that one.
        const orders = [newOrder(), newOrder(), newOrder(), newOrder()];
        const heads: Stored[] = [];
        for (const order of orders)
          heads.push(await store(eventOf("sales_order_created", order), line.sales_order_created, 0, LEASE_MS));
        const nexts: Stored[] = [];
        for (const i of [1, 3, 2, 0])
          nexts.push(await store(eventOf("sales_order_validated", orders[i]), line.sales_order_validated, 0, LEASE_MS));
        const [lowest, ...others] = nexts;
        // One claim takes the heads (the next ones wait behind them).
        const claims = await repo.claimDue(db, 100, LEASE_MS, ALLOWANCE);
        expect(claims.map((c) => Number(c.id)).sort((a, b) => a - b)).toEqual(heads.map((h) => h.id));
        for (const claim of claims) await record(db, claim, { status: "succeeded", retryInMs: null }, 200);
        const deadlocks = async () =>
          Number(
            (
              await db.raw<{ rows: { n: string }[] }>(
                "SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()",
              )
            ).rows[0].n,
          );
        const waiting = () =>
          db
            .raw<{ rows: { n: number }[] }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE webhooks.deliveries later%'",
            )
            .then((r) => r.rows[0].n > 0);
        const before = await deadlocks();
        let release: Promise<void> | undefined;
        await db.transaction(async (trx) => {
          // This side never gives up first: the release is the deadlock's victim.
          await trx.raw("SET LOCAL deadlock_timeout = '60s'");
          await trx.raw("SELECT 1 FROM webhooks.deliveries WHERE id = ? FOR UPDATE", [lowest.id]);
          release = releaseNextOf(
            db,
            heads.map((h) => h.id),
            0,
          );
          await until(waiting, "the release waits for the row held");
          // Waits for the rows the release holds while it waits for ours: a circle.
          await trx.raw("SELECT 1 FROM webhooks.deliveries WHERE id = ANY(?) FOR UPDATE", [others.map((d) => d.id)]);
        });
        await release;
        expect(await deadlocks()).toBeGreaterThan(before);
        expect(await claimOf(...nexts)).toEqual(nexts);
      },
    );

    it("when a delivery settles, then it leaves its line (its sequence is cleared); one whose retry is scheduled stays in it", async () => {
      // One at a time: a claim takes every due delivery.
      const settled = await store(eventOf("sales_order_created", newOrder()), line.sales_order_created);
      await succeed(settled);
      const retried = await store(eventOf("sales_order_created", newOrder()), line.sales_order_created);
      await failAndRetryLater(retried);
      const sequenceOf = async (d: Stored) =>
        (await W().table("deliveries").where({ id: d.id }).first<{ sequence: string | null }>("sequence")).sequence;
      expect(await sequenceOf(retried)).not.toBeNull();
      expect(await sequenceOf(settled)).toBeNull();
    });

    it("when the one before is still unsettled after the next one is stored, then the next one does not release itself", async () => {
      const order = newOrder();
      await store(eventOf("sales_order_created", order), line.sales_order_created, 0, LEASE_MS);
      const e = eventOf("sales_order_validated", order);
      const { behind } = await repo.insertEventDeliveries(db, e, "{}", [line.sales_order_validated], undefined, {
        holdMs: 0,
        behindMs: LEASE_MS,
      });
      expect(behind).toHaveLength(1);
      await releaseIfFirstInLine(db, behind, 0);
      expect((await dueAt({ id: behind[0], eventId: e.id })).getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);
    });

    it("when the one before settles within the next one's hold, then the next is released due at the hold's end, not sooner", async () => {
      const order = newOrder();
      const head = await store(eventOf("sales_order_created", order), line.sales_order_created, 0, LEASE_MS);
      const next = await store(eventOf("sales_order_validated", order), line.sales_order_validated, 0, LEASE_MS);
      const storedAt = (
        await W().table("deliveries").where({ id: next.id }).first<{ created_at: Date }>("created_at")
      ).created_at.getTime();
      await succeed(head, HOLD_MS);
      expect((await dueAt(next)).getTime()).toBe(storedAt + HOLD_MS);
    });

    it("when a claimed delivery is cancelled because its client lost the grant, then the next of its line is released", async () => {
      const order = newOrder();
      const head = await store(eventOf("sales_order_created", order), line.sales_order_created, 0, LEASE_MS);
      const next = await store(eventOf("sales_order_validated", order), line.sales_order_validated, 0, LEASE_MS);
      const [claim] = (await repo.claimDue(db, 100, LEASE_MS, ALLOWANCE)).filter((c) => Number(c.id) === head.id);
      await repo.cancelClaims(db, [{ id: Number(claim.id), claim_token: claim.claim_token }]);
      expect(await claimOf(head, next)).toEqual([next]);
    });

    it("when a subscription of the line is disabled, then nothing of it is claimed, and its cancelled deliveries release the line's next", async () => {
      const url = `${receiver.url}/disabled-line`;
      const first = (await subscribe("sales_order_validated", url, "per_entity")).id;
      const second = (await subscribe("sales_order_cancelled", url, "per_entity")).id;
      const order = newOrder();
      const held = await store(eventOf("sales_order_validated", order), first);
      const next = await store(eventOf("sales_order_cancelled", order), second);
      await retryLater(held);
      expect(await claimOf(held, next)).toEqual([]);

      await t.call("webhooks.disable", { id: first }, partner);
      // Its queue is cancelled (kept, never sent), which releases the line...
      expect(await W().table("deliveries").where({ id: held.id }).first("status")).toEqual({ status: "cancelled" });
      expect(await claimOf(held, next)).toEqual([next]);
      // ...and it gets nothing new while disabled.
      const e = eventOf("sales_order_validated", order);
      expect(await repo.insertEventDeliveries(db, e, "{}", [first])).toEqual({ created: 0, claimed: [], behind: [] });
    });
  });

  describe("the fan-out's direct hand-off", () => {
    const direct = (e: DomainEvent, subscriptionId: number, holdMs = 0) =>
      repo.insertEventDeliveries(
        db,
        e,
        "{}",
        [subscriptionId],
        { subscriptionIds: [subscriptionId], leaseMs: LEASE_MS },
        { holdMs, behindMs: 0 },
      );

    it("when an earlier delivery of the line is unsettled, then a per_entity delivery is stored due, not claimed; with none before it, it is claimed", async () => {
      const order = newOrder();
      const first = await direct(eventOf("sales_order_created", order), line.sales_order_created);
      expect(first.claimed).toHaveLength(1);
      expect(first.claimed[0].in_line).toBe(true);
      const second = await direct(eventOf("sales_order_validated", order), line.sales_order_validated);
      expect(second).toEqual({ created: 1, claimed: [], behind: [expect.any(Number)] });
      // A `none` subscription's is claimed whatever came before.
      await store(eventOf("sales_order_validated", order), unordered);
      const free = await direct(eventOf("sales_order_validated", order), unordered);
      expect(free.claimed).toHaveLength(1);
      expect(free.claimed[0].in_line).toBe(false);
    });

    it("when the hold has not passed since the event happened, then a per_entity delivery is stored due at its end, not claimed", async () => {
      const e = eventOf("sales_order_created", newOrder());
      const stored = await direct(e, line.sales_order_created, HOLD_MS);
      expect(stored).toEqual({ created: 1, claimed: [], behind: [] });
      const row = (await W().table("deliveries").where({ event_id: e.id }).first()) as { next_attempt_at: Date };
      expect(row.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + HOLD_MS / 2);
      expect(row.next_attempt_at.getTime()).toBeLessThanOrEqual(new Date(e.occurredAt).getTime() + HOLD_MS + 1_000);
    });
  });
});
