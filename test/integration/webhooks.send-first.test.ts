/**
 * Deliveries sent before they are stored (webhooks.send-first.ts), on PostgreSQL: what the
 * fan-out statement returns instead of storing, how the first attempt's outcome writes the row
 * once (no row updated on the success path), the claim a slow attempt leaves, and, through the
 * dispatcher and the fan-out, that an event is acknowledged only once its deliveries are
 * written, that a burst waits for room rather than being stored due, and that a change which
 * cancels queued deliveries reaches one whose attempt was in flight when it was made
 * (webhooks.late-changes.ts).
 */
import type { Knex } from "knex";
import { loadConfig } from "../../shared/config/config";
import { openDatabase } from "../../shared/database/db";
import { GroupCommit } from "../../shared/database/group-commit";
import type { DomainEvent } from "../../shared/messaging/events";
import { rememberingOpener } from "../../shared/security/secret-box";
import { secretBoxFor } from "../../shared/security/secrets-keyring";
import type { Principal } from "../../shared/security/auth";
import * as deliveries from "../../services/webhooks/webhooks.deliveries.repository";
import { recordAttempts, recordFirstAttempts } from "../../services/webhooks/webhooks.attempts.repository";
import { Dispatcher, type DispatcherOptions } from "../../services/webhooks/webhooks.dispatcher";
import { fanOut } from "../../services/webhooks/webhooks.fanout";
import { ClientGrants } from "../../services/webhooks/webhooks.grants";
import { SubscriptionListeners } from "../../services/webhooks/webhooks.listeners";
import { sendWebhook, type AttemptOutcome } from "../../services/webhooks/webhooks.sender";
import { recheckClient } from "../../services/webhooks/webhooks.entitlement";
import { applyChangesMissed } from "../../services/webhooks/webhooks.late-changes";
import { SubscriptionHealth } from "../../services/webhooks/webhooks.subscription-health";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { TEST_SECRETS_ENCRYPTION_KEYS } from "../helpers/processes";
import { requires } from "../helpers/prerequisites";
import { numberedValidations } from "../helpers/numbered-events";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(90_000);

const LEASE_MS = 60_000;
const W = "webhooks";

requires(["postgres"]).describe("webhooks: deliveries sent before they are stored", () => {
  let t: TestBroker;
  let db: Knex;
  /** The fan-outs' writes: those that arrive together (the burst below) commit together. */
  let writes: GroupCommit;
  let receiver: WebhookReceiver;
  /** Each test's own partner: its subscriptions hear only its own events. */
  const partners = new Map<number, Principal>();
  let partner: Principal;
  beforeEach(() => {
    partner = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: ["sales_order_validated"] };
    partners.set(partner.clientId, partner);
  });
  const eventFor = numberedValidations("send-first", () => partner.clientId);
  const subscribe = async (path: string, extra: object = {}) =>
    (
      await t.call<{ id: number }>(
        "webhooks.subscribe",
        { event: "sales_order_validated", url: `${receiver.url}/${path}`, ...extra },
        partner,
      )
    ).id;
  const rowsOf = (eventId: string) =>
    db.withSchema(W).table("deliveries").where({ event_id: eventId }) as Promise<
      {
        id: string;
        status: string;
        attempt_count: number;
        claim_token: string | null;
        next_trigger: string | null;
        created_at: Date;
      }[]
    >;
  const attemptsOf = (deliveryId: number | string) =>
    db.withSchema(W).table("attempts").where({ delivery_id: deliveryId }) as Promise<{ status_code: number | null }[]>;
  /** Sends first what the fan-out statement returns for one reserved subscription. */
  const unstoredFor = async (e: DomainEvent, subscriptionId: number) =>
    deliveries.insertEventDeliveries(db, e, "{}", [subscriptionId], {
      subscriptionIds: [subscriptionId],
      leaseMs: LEASE_MS,
      sendFirst: true,
    });

  beforeAll(async () => {
    // Its dispatcher (no transporter: sendFirst off) claims whatever is stored due: nothing here should be.
    t = await startTestBroker({ services: ["webhooks"], env: { WEBHOOK_DISPATCH_INTERVAL_MS: "100" } });
    db = openDatabase(t.database.url);
    writes = new GroupCommit(db);
    receiver = await startReceiver();
    // Every UPDATE of a delivery row, counted by PostgreSQL itself.
    await db.raw(`CREATE TABLE webhooks.test_delivery_updates (n int NOT NULL)`);
    await db.raw(`CREATE FUNCTION webhooks.test_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
                  BEGIN INSERT INTO webhooks.test_delivery_updates VALUES (1); RETURN NEW; END $$`);
    await db.raw(`CREATE TRIGGER test_count_update BEFORE UPDATE ON webhooks.deliveries
                  FOR EACH ROW EXECUTE FUNCTION webhooks.test_count_update()`);
  });
  afterAll(async () => {
    await db?.destroy();
    await t?.stop();
    await receiver?.close();
  });
  const updatesCounted = async () => {
    const [row] = await db.withSchema(W).table("test_delivery_updates").count<{ n: string }[]>({ n: "*" });
    return Number(row.n);
  };

  describe("the statements", () => {
    it("when a reserved subscription's delivery needs no order, then it is returned unstored with its id taken, and only the event is stored", async () => {
      const subscriptionId = await subscribe("statement");
      const e = eventFor();
      const stored = await unstoredFor(e, subscriptionId);
      expect(stored.created).toBe(1);
      expect(stored.claimed).toHaveLength(1);
      const [d] = stored.claimed;
      expect(d.unstored).toEqual({ event_id: e.id, created_at: expect.any(String) });
      expect(Number(d.id)).toBeGreaterThan(0);
      expect(d).toMatchObject({ subscription_id: subscriptionId, attempt_count: 0, trigger: "scheduled" });
      expect(await rowsOf(e.id)).toEqual([]);
      expect(await db.withSchema(W).table("events").where({ id: e.id })).toHaveLength(1);
    });

    it("when its first attempt succeeded, then the delivery is written once, succeeded, with its attempt, and no row is updated", async () => {
      const subscriptionId = await subscribe("once");
      const e = eventFor();
      const [d] = (await unstoredFor(e, subscriptionId)).claimed;
      const before = await updatesCounted();
      await recordFirstAttempts(db, [
        {
          claim: d as Required<typeof d>,
          attempt: { attemptedAt: new Date(), statusCode: 204, error: null, durationMs: 3, trigger: "scheduled" },
          next: { status: "succeeded", retryInMs: null },
        },
      ]);
      const [row] = await rowsOf(e.id);
      expect(row).toMatchObject({ status: "succeeded", attempt_count: 1, claim_token: null, next_trigger: null });
      expect(Number(row.id)).toBe(Number(d.id));
      expect(row.created_at.toISOString()).toBe(d.unstored!.created_at);
      expect(await attemptsOf(row.id)).toMatchObject([{ status_code: 204 }]);
      expect(await updatesCounted()).toBe(before);
      // Offered again (a redelivered event): nothing is sent or stored again.
      expect(await unstoredFor(e, subscriptionId)).toEqual({ created: 0, claimed: [], behind: [] });
    });

    it("when its first attempt failed, then it is written pending, its retry scheduled, for any dispatcher's claim", async () => {
      const subscriptionId = await subscribe("retry");
      const e = eventFor();
      const [d] = (await unstoredFor(e, subscriptionId)).claimed;
      await recordFirstAttempts(db, [
        {
          claim: d as Required<typeof d>,
          attempt: { attemptedAt: new Date(), statusCode: 500, error: null, durationMs: 3, trigger: "scheduled" },
          next: { status: "pending", retryInMs: 3_600_000 },
        },
      ]);
      const [row] = (await db.withSchema(W).table("deliveries").where({ event_id: e.id })) as {
        id: string;
        status: string;
        attempt_count: number;
        next_trigger: string;
        next_attempt_at: Date;
      }[];
      expect(row).toMatchObject({ status: "pending", attempt_count: 1, next_trigger: "retry" });
      expect(row.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + 3_500_000);
      expect(await attemptsOf(row.id)).toMatchObject([{ status_code: 500 }]);
    });

    it("when its subscription was deleted while it was sent, then nothing is written and nothing fails", async () => {
      const subscriptionId = await subscribe("deleted");
      const e = eventFor();
      const [d] = (await unstoredFor(e, subscriptionId)).claimed;
      await t.call("webhooks.unsubscribe", { id: subscriptionId }, partner);
      await recordFirstAttempts(db, [
        {
          claim: d as Required<typeof d>,
          attempt: { attemptedAt: new Date(), statusCode: 200, error: null, durationMs: 3, trigger: "scheduled" },
          next: { status: "succeeded", retryInMs: null },
        },
      ]);
      expect(await rowsOf(e.id)).toEqual([]);
      expect(await attemptsOf(d.id)).toEqual([]);
    });

    it("when its attempt is slow, then it is stored claimed under a lease, and its outcome updates that claim", async () => {
      const subscriptionId = await subscribe("slow");
      const e = eventFor();
      const [d] = (await unstoredFor(e, subscriptionId)).claimed;
      expect(await deliveries.storeClaimed(db, d as Required<typeof d>, LEASE_MS)).toBe(true);
      expect(await rowsOf(e.id)).toMatchObject([{ status: "pending", attempt_count: 0, claim_token: d.claim_token }]);
      // Nobody else claims it meanwhile.
      expect(
        (await deliveries.claimDue(db, 100, LEASE_MS, { perEndpoint: 100, limits: [] })).map((c) => Number(c.id)),
      ).not.toContain(Number(d.id));
      await recordAttempts(db, [
        {
          claim: d,
          attempt: { attemptedAt: new Date(), statusCode: 200, error: null, durationMs: 1_500, trigger: "scheduled" },
          next: { status: "succeeded", retryInMs: null },
        },
      ]);
      expect(await rowsOf(e.id)).toMatchObject([{ status: "succeeded", attempt_count: 1, claim_token: null }]);
      // Stored already: a second store (another replica) stores nothing.
      expect(await deliveries.storeClaimed(db, d as Required<typeof d>, LEASE_MS)).toBe(false);
    });
  });

  describe("the dispatcher and the fan-out", () => {
    const keys = () =>
      loadConfig({ DATABASE_URL: t.database.url, SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS });
    const grants = new ClientGrants((ids) => Promise.resolve(ids.flatMap((id) => partners.get(id) ?? [])));
    const logger = () => t.broker.getLogger("send-first-test");
    const dispatcherWith = (opts: {
      batch: number;
      holdMs?: number;
      timeoutMs?: number;
      send?: DispatcherOptions["send"];
    }) =>
      new Dispatcher({
        db,
        logger: logger(),
        send:
          opts.send ??
          ((w) =>
            sendWebhook(w, {
              timeoutMs: opts.timeoutMs ?? 10_000,
              allowInsecure: true,
              secrets: rememberingOpener(secretBoxFor(keys(), () => undefined)),
            })),
        changesMissed: (queued) => applyChangesMissed(db, grants, logger(), queued),
        entitledOnly: (claimed) => Promise.resolve(claimed),
        batch: opts.batch,
        endpointConcurrency: opts.batch,
        intervalMs: 60_000,
        timeoutMs: opts.timeoutMs ?? 10_000,
        retry: { scheduleSeconds: [3600], retryAfterMaxMs: 60_000 },
        health: new SubscriptionHealth({ db, disableAfterMs: 86_400_000, recoveredAfterMs: 5_000 }),
        sendFirst: true,
        holdMs: opts.holdMs,
        // Nothing in these tests may fall back to storing due for want of room.
        waitForRoomMs: 60_000,
      });
    /** Who listens, read afresh (each test subscribes anew). */
    const fanOutOf = (dispatcher: Dispatcher, e: DomainEvent) =>
      fanOut(writes, grants, new SubscriptionListeners(db), { ...e, event: "sales_order_validated" }, dispatcher);
    const pathOf = (path: string) => (r: { path: string }) => r.path === `/${path}`;

    it("when the outcome cannot be written, then the fan-out fails (its event is offered again), and offered again it is sent again and written once", async () => {
      const subscriptionId = await subscribe("unwritable");
      const dispatcher = dispatcherWith({ batch: 4 });
      dispatcher.start();
      try {
        const e = eventFor();
        // Attempts of this subscription cannot be written for now.
        await db.raw(
          `ALTER TABLE webhooks.attempts ADD CONSTRAINT test_unwritable CHECK (delivery_id >= 0 AND status_code <> 299)`,
        );
        receiver.answerWith(() => 299);
        try {
          await expect(fanOutOf(dispatcher, e)).rejects.toThrow(/sent, but not recorded/);
        } finally {
          await db.raw(`ALTER TABLE webhooks.attempts DROP CONSTRAINT test_unwritable`);
          receiver.answerWith(() => 200);
        }
        expect(await rowsOf(e.id)).toEqual([]);
        await expect(fanOutOf(dispatcher, e)).resolves.toMatchObject({ created: 1 });
        const rows = await rowsOf(e.id);
        expect(rows).toMatchObject([{ status: "succeeded", attempt_count: 1 }]);
        expect(receiver.received.filter(pathOf("unwritable"))).toHaveLength(2);
        expect(subscriptionId).toBeGreaterThan(0);
      } finally {
        await dispatcher.stop();
      }
    });

    it("when the attempt outlasts the hold, then the fan-out returns with the delivery stored claimed, and the outcome updates it", async () => {
      await subscribe("hanging");
      const dispatcher = dispatcherWith({ batch: 4, holdMs: 200, timeoutMs: 3_000 });
      dispatcher.start();
      receiver.answerWith((r) => (r.path === "/hanging" ? "hang" : 200));
      try {
        const e = eventFor();
        await fanOutOf(dispatcher, e);
        // Returned while the receiver still holds the request: stored claimed, no attempt yet.
        expect(await rowsOf(e.id)).toMatchObject([
          { status: "pending", attempt_count: 0, claim_token: expect.any(String) },
        ]);
        await receiver.waitFor(() => receiver.received.some(pathOf("hanging")), 30_000);
        // The time-out is the outcome: the claim is updated to its retry.
        await dispatcher.stop();
        expect(await rowsOf(e.id)).toMatchObject([
          { status: "pending", attempt_count: 1, claim_token: null, next_trigger: "retry" },
        ]);
      } finally {
        receiver.answerWith(() => 200);
        await dispatcher.stop();
      }
    });

    it("when a burst outnumbers the batch, then its fan-outs wait for room: every delivery is written once, succeeded, and no row is updated", async () => {
      const paths = ["burst-a", "burst-b", "burst-c"];
      for (const p of paths) await subscribe(p);
      // Room for one event's deliveries at a time: the other fan-outs wait their turn.
      const dispatcher = dispatcherWith({ batch: paths.length });
      dispatcher.start();
      receiver.answerWith(() => ({ status: 200, afterMs: 20 }));
      const before = await updatesCounted();
      try {
        const events = Array.from({ length: 12 }, () => eventFor());
        const results = await Promise.all(events.map((e) => fanOutOf(dispatcher, e)));
        // None was left due for a claim.
        expect(results.every((r) => r.created === paths.length && r.queued.length === 0)).toBe(true);
        for (const e of events) {
          expect((await rowsOf(e.id)).map((r) => [r.status, r.attempt_count])).toEqual(
            paths.map(() => ["succeeded", 1]),
          );
        }
        expect(await updatesCounted()).toBe(before);
        for (const p of paths) expect(receiver.received.filter(pathOf(p))).toHaveLength(events.length);
      } finally {
        receiver.answerWith(() => 200);
        await dispatcher.stop();
      }
    });

    describe("when a change that cancels queued deliveries is made while a first attempt is in flight", () => {
      /** A send that fails (500) when the test opens it: the change is made while it waits. */
      function heldSend() {
        let open!: () => void;
        let entered!: () => void;
        const opened = new Promise<void>((resolve) => (open = resolve));
        const inFlight = new Promise<void>((resolve) => (entered = resolve));
        const send = async (): Promise<AttemptOutcome> => {
          entered();
          await opened;
          return { kind: "rejected", statusCode: 500, durationMs: 1 };
        };
        return { send, inFlight, open };
      }
      const statusOf = async (eventId: string) => (await rowsOf(eventId)).map((r) => [r.status, r.attempt_count]);

      it("then a client that lost the event meanwhile has the failed delivery cancelled, not queued for its retry", async () => {
        await subscribe("lost-meanwhile");
        const held = heldSend();
        const dispatcher = dispatcherWith({ batch: 4, send: held.send });
        dispatcher.start();
        const lostFrom = partner;
        try {
          const e = eventFor();
          const fannedOut = fanOutOf(dispatcher, e);
          await held.inFlight;
          // The clients.changed broadcast's work, done before the row exists: nothing to cancel yet.
          partners.set(lostFrom.clientId, { ...lostFrom, webhookEvents: ["sales_order_cancelled"] });
          await recheckClient(db, grants, logger(), lostFrom.clientId);
          expect(await rowsOf(e.id)).toEqual([]);
          held.open();
          await fannedOut;
          expect(await statusOf(e.id)).toEqual([["cancelled", 1]]);
          expect(await attemptsOf((await rowsOf(e.id))[0].id)).toMatchObject([{ status_code: 500 }]);
        } finally {
          held.open();
          await dispatcher.stop();
          partners.set(lostFrom.clientId, lostFrom);
        }
      });

      it("then a client whose grants did not change keeps its failed delivery queued for its retry", async () => {
        await subscribe("kept-meanwhile");
        const held = heldSend();
        const dispatcher = dispatcherWith({ batch: 4, send: held.send });
        dispatcher.start();
        try {
          const e = eventFor();
          const fannedOut = fanOutOf(dispatcher, e);
          await held.inFlight;
          // Another client changed: this one's delivery is not re-decided.
          await recheckClient(db, grants, logger(), partner.clientId + 1_000_000);
          held.open();
          await fannedOut;
          expect(await statusOf(e.id)).toEqual([["pending", 1]]);
        } finally {
          held.open();
          await dispatcher.stop();
        }
      });

      it("then a subscription disabled meanwhile has the failed delivery cancelled, before or after the slow attempt was stored claimed", async () => {
        for (const holdMs of [60_000, 50]) {
          const subscriptionId = await subscribe(`disabled-meanwhile-${holdMs}`);
          const held = heldSend();
          const dispatcher = dispatcherWith({ batch: 4, holdMs, send: held.send });
          dispatcher.start();
          try {
            const e = eventFor();
            const fannedOut = fanOutOf(dispatcher, e);
            await held.inFlight;
            await t.call("webhooks.disable", { id: subscriptionId }, partner);
            // With a short hold, the slow attempt is stored claimed after the disabling: the fan-out returns.
            if (holdMs < 1_000) {
              await fannedOut;
              expect(await statusOf(e.id)).toEqual([["pending", 0]]);
            }
            held.open();
            await fannedOut;
            await dispatcher.stop();
            expect(await statusOf(e.id)).toEqual([["cancelled", 1]]);
          } finally {
            held.open();
            await dispatcher.stop();
          }
        }
      });
    });
  });
});
