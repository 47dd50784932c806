/**
 * The class of webhooks.deliveries-by-id.ts: every statement that looks deliveries up by id reads
 * them through the primary key, even when the table's statistics, taken before the backlog, say
 * that a partial index (what has not succeeded, what is in a per-entity line) is nearly empty
 * while thousands of rows fill it. Otherwise the planner reads the whole partial index for a few
 * ids: bench:webhooks' per_entity phase read 790 rows per delivery instead of 21 after an ANALYZE.
 *
 * Each statement is measured by the rows of webhooks.deliveries its transaction read
 * (pg_stat_xact_user_tables), in a transaction that is rolled back: a few ids cost tens of rows,
 * the backlog thousands. A transaction held open while the service runs: PostgreSQL only.
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import type { EventName } from "../../shared/messaging/events";
import type { Principal } from "../../shared/security/auth";
import { announceExhausted, type FinishedOutcome } from "../../services/webhooks/webhooks.operational-events";
import { releaseIfFirstInLine, releaseNextOf } from "../../services/webhooks/webhooks.ordering";
import { recoverNextBatch, type RecoveryRow } from "../../services/webhooks/webhooks.recoveries.repository";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { requires } from "../helpers/prerequisites";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const BACKLOG = 2_000;
/** The ids one statement is given: a batch of the dispatcher's size. */
const LOOKED_UP = 10;
/** The ids' own rows, a second read of each, and a few probes of their lines: never the backlog. */
const FEW_ROWS = 200;

const describeWithPostgres = requires(["postgres"]).describe;

describeWithPostgres("webhooks: deliveries looked up by id, whatever the statistics say", () => {
  let t: TestBroker;
  let db: Knex;
  /** Never called: the dispatcher looks once an hour. The subscriptions need a URL that may be reached. */
  let receiver: WebhookReceiver;
  const EVENTS: EventName[] = ["sales_order_validated"];
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: EVENTS };
  const marker = `by-id-${Date.now()}`;
  let plain: number;
  let inLine: number;
  /** The backlog's ids: failed on `plain`, waiting in line on `inLine`. */
  let failedIds: number[];
  let waitingIds: number[];

  const subscribe = async (path: string, ordering?: string) =>
    (
      await t.call<{ id: number }>(
        "webhooks.subscribe",
        { event: "sales_order_validated", url: `${receiver.url}/${path}`, ...(ordering ? { ordering } : {}) },
        partner,
      )
    ).id;

  /** Rows of webhooks.deliveries this transaction has read so far, by scans of the table and of its indexes. */
  const rowsRead = async (trx: Knex.Transaction) => {
    const { rows } = await trx.raw<{ rows: { read: string }[] }>(
      `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS read
         FROM pg_stat_xact_user_tables WHERE relid = 'webhooks.deliveries'::regclass`,
    );
    return Number(rows[0].read);
  };

  /**
   * Runs `step` in a transaction that is rolled back, after `setup` and before `check` in the same
   * transaction: resolves to what `check` found and the rows `step` alone read.
   */
  const measured = async <T>(
    step: (trx: Knex.Transaction) => Promise<unknown>,
    around: { setup?: (trx: Knex.Transaction) => Promise<unknown>; check: (trx: Knex.Transaction) => Promise<T> },
  ): Promise<{ found: T; read: number }> => {
    const trx = await db.transaction();
    try {
      await around.setup?.(trx);
      const before = await rowsRead(trx);
      await step(trx);
      const read = (await rowsRead(trx)) - before;
      return { found: await around.check(trx), read };
    } finally {
      await trx.rollback();
    }
  };

  beforeAll(async () => {
    t = await startTestBroker({ services: ["webhooks"], env: { WEBHOOK_DISPATCH_INTERVAL_MS: "3600000" } });
    db = openDatabase(t.database.url);
    receiver = await startReceiver();
    plain = await subscribe("plain");
    inLine = await subscribe("line", "per_entity");
    // What the statistics see: deliveries that all succeeded, in no line...
    await db.raw(
      `INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count)
       SELECT ?, ? || g, 'msg_' || g, 'succeeded', 1 FROM generate_series(1, ?) g`,
      [plain, `${marker}-succeeded-`, BACKLOG],
    );
    await db.raw("ANALYZE webhooks.deliveries");
    // ... and the backlog that came after: deliveries that failed, and deliveries waiting in line
    // (two per order, the second behind the first).
    const failed = await db.raw<{ rows: { id: string }[] }>(
      `INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count)
       SELECT ?, ? || g, 'msg_' || g, 'failed', 8 FROM generate_series(1, ?) g
       RETURNING id`,
      [plain, `${marker}-failed-`, BACKLOG],
    );
    failedIds = failed.rows.map((r) => Number(r.id));
    await db.raw(
      `INSERT INTO webhooks.events (id, event, owner_client_id, entity, entity_id, occurred_at, body)
       SELECT ? || g, 'sales_order_validated', ?, 'order', g, now(), '{}' FROM generate_series(1, ?) g`,
      [`${marker}-failed-`, partner.clientId, BACKLOG],
    );
    const waiting = await db.raw<{ rows: { id: string }[] }>(
      `INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, next_attempt_at, entity_key, sequence)
       SELECT ?, ? || g, 'msg_' || g, now() + interval '1 hour', 'order:' || (3000000 + g / 2), g
         FROM generate_series(2, ? + 1) g
       RETURNING id`,
      [inLine, `${marker}-line-`, BACKLOG],
    );
    waitingIds = waiting.rows.map((r) => Number(r.id));
  });
  afterAll(async () => {
    await db?.withSchema("webhooks").table("deliveries").where("event_id", "like", `${marker}-%`).delete();
    await db?.withSchema("webhooks").table("events").where("id", "like", `${marker}-%`).delete();
    await db?.withSchema("webhooks").table("recoveries").whereIn("subscription_id", [plain, inLine]).delete();
    await t?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  it("when a batch gave up, then its exhausted deliveries are announced from their own rows, not from every delivery that failed", async () => {
    const ids = failedIds.slice(0, LOOKED_UP);
    const gaveUp = ids.map(
      (id) =>
        ({
          delivery: { id },
          attempt: { attemptedAt: new Date(), statusCode: 500, error: null, durationMs: 1, trigger: "scheduled" },
        }) as unknown as FinishedOutcome,
    );
    const { found: announced, read } = await measured((trx) => announceExhausted(trx, gaveUp), {
      // Failed by this transaction, as recordAttempts does before announcing them.
      setup: (trx) =>
        trx.withSchema("webhooks").table("deliveries").whereIn("id", ids).update({ updated_at: trx.fn.now() }),
      check: async (trx) =>
        (await trx.withSchema("webhooks").table("outbox").where({ event: "webhook_delivery_exhausted" })).length,
    });
    expect(announced).toBe(LOOKED_UP);
    expect(read).toBeLessThan(FEW_ROWS);
  });

  it("when a recovery of failed deliveries reaches them, then it queues them again, reading only them", async () => {
    const ids = failedIds.slice(0, LOOKED_UP);
    // Walked past the deliveries that succeeded (inserted before the failures): the next batch is the failures.
    const lastSucceeded = failedIds[0] - 1;
    let claim: RecoveryRow | undefined;
    const { found: requeued, read } = await measured((trx) => recoverNextBatch(trx, claim!, LOOKED_UP, 60_000), {
      setup: async (trx) => {
        [claim] = (await trx
          .withSchema("webhooks")
          .table("recoveries")
          .insert({
            subscription_id: plain,
            since: new Date(Date.now() - 3_600_000),
            until: new Date(Date.now() + 3_600_000),
            all_deliveries: false,
            status: "running",
            claim_token: "00000000-0000-4000-8000-0000000000b1",
            claimed_until: trx.raw("now() + interval '1 hour'"),
            after_created_at: trx.raw("(SELECT created_at FROM webhooks.deliveries WHERE id = ?)", [lastSucceeded]),
            after_delivery_id: lastSucceeded,
          })
          .returning("*")) as RecoveryRow[];
      },
      check: async (trx) =>
        (await trx.withSchema("webhooks").table("deliveries").whereIn("id", ids).select("status", "next_trigger")).map(
          (d: { status: string; next_trigger: string }) => `${d.status} ${d.next_trigger}`,
        ),
    });
    expect(requeued).toEqual(Array(LOOKED_UP).fill("pending recovery"));
    expect(read).toBeLessThan(FEW_ROWS);
  });

  it("when waiting deliveries are released by id, then only their rows and their lines' nearest are read, not the whole line index", async () => {
    const ids = waitingIds.slice(0, LOOKED_UP);
    const { found: released, read } = await measured(
      async (trx) => {
        await releaseIfFirstInLine(trx, ids, 0);
        await releaseNextOf(trx, ids, 0);
      },
      {
        // The first of each order's two is first in its line: due now, no longer in an hour.
        check: async (trx) =>
          (await trx.withSchema("webhooks").table("deliveries").whereIn("id", ids).whereRaw("next_attempt_at <= now()"))
            .length,
      },
    );
    expect(released).toBe(LOOKED_UP / 2);
    expect(read).toBeLessThan(FEW_ROWS);
  });
});
