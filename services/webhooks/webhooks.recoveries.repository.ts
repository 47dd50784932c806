/**
 * SQL of the `recoveries` table: a request to queue a window of deliveries again, claimed by
 * one replica at a time and worked through in short batches (webhooks.recovery.ts).
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { exactTimestamp } from "../../shared/database/exact-timestamp";
import { deliveriesByIds } from "./webhooks.deliveries-by-id";

const S = "webhooks";

export type RecoveryStatus = "queued" | "running" | "done";

export interface RecoveryRow {
  id: number;
  subscription_id: number;
  since: Date;
  requested_until: Date | null;
  until: Date;
  all_deliveries: boolean;
  status: RecoveryStatus;
  claim_token: string | null;
  /**
   * Where the walk of the window stands: the (created_at, id) of the last delivery it examined;
   * `after_created_at` is null before the first batch.
   */
  after_delivery_id: number;
  after_created_at: Date | null;
  examined: number;
  queued: number;
  created_at: Date;
  finished_at: Date | null;
}

export interface RecoveryRequest {
  since: Date;
  until: Date | null;
  all: boolean;
}

/**
 * The recovery this request gets: one of the last `sameWithinMs` with the same window and flags
 * (finished or not: a double click does not send again what just went), else a new one, else
 * the subscription's unfinished one (at most one: recoveries_one_active), which the caller
 * compares with what it asked. The caller holds the subscription exclusively
 * (webhooks.active-subscription.ts), so two requests never both find nothing and both insert.
 */
export async function createRecovery(
  db: Db,
  subscriptionId: number,
  r: RecoveryRequest,
  sameWithinMs: number,
): Promise<{ row: RecoveryRow; created: boolean }> {
  for (;;) {
    const recent = await db
      .withSchema(S)
      .table("recoveries")
      .where({ subscription_id: subscriptionId, since: r.since, all_deliveries: r.all })
      .whereRaw("requested_until IS NOT DISTINCT FROM ?::timestamptz", [r.until])
      .andWhereRaw("created_at > now() - ?::bigint * interval '1 millisecond'", [sameWithinMs])
      .orderBy("id", "desc")
      .first<RecoveryRow | undefined>();
    if (recent) return { row: normalRecovery(recent), created: false };
    const inserted = await db.raw<{ rows: RecoveryRow[] }>(
      `INSERT INTO ??.recoveries (subscription_id, since, requested_until, until, all_deliveries)
       VALUES (?, ?, ?::timestamptz, coalesce(?::timestamptz, now()), ?)
       ON CONFLICT (subscription_id) WHERE status <> 'done' DO NOTHING
       RETURNING *`,
      [S, subscriptionId, r.since, r.until, r.until, r.all],
    );
    const [row] = inserted.rows;
    if (row) return { row: normalRecovery(row), created: true };
    const active = await db
      .withSchema(S)
      .table("recoveries")
      .where({ subscription_id: subscriptionId })
      .whereNot("status", "done")
      .first<RecoveryRow | undefined>();
    // It finished between the two statements: ask again.
    if (active) return { row: normalRecovery(active), created: false };
  }
}

export async function findRecovery(db: Db, subscriptionId: number, id: number): Promise<RecoveryRow | undefined> {
  const row = (await db.withSchema(S).table("recoveries").where({ id, subscription_id: subscriptionId }).first()) as
    RecoveryRow | undefined;
  return row && normalRecovery(row);
}

/** bigint columns come back as text from node-postgres. */
function normalRecovery(row: RecoveryRow): RecoveryRow {
  return { ...row, id: Number(row.id), after_delivery_id: Number(row.after_delivery_id) };
}

/**
 * Claims the oldest unfinished recovery nobody holds (never claimed, or its holder's lease
 * ended), for `leaseMs`: one replica works on it at a time.
 */
export async function claimRecovery(db: Knex, leaseMs: number): Promise<RecoveryRow | undefined> {
  const result = await db.raw<{ rows: RecoveryRow[] }>(
    `UPDATE ??.recoveries r
        SET status = 'running', claim_token = gen_random_uuid(), claimed_until = now() + ? * interval '1 millisecond'
      WHERE r.id = (SELECT id FROM ??.recoveries
                     WHERE status <> 'done' AND (claimed_until IS NULL OR claimed_until < now())
                     ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING *`,
    [S, leaseMs, S],
  );
  const [row] = result.rows;
  return row && normalRecovery(row);
}

/**
 * Queues again the next `batch` deliveries of the recovery's window (those that did not succeed,
 * or all of them with `all_deliveries`; pending ones are on their way already) and extends the
 * lease, in one short transaction; marks the recovery done after the last. Returns how many were
 * queued, or null when the claim was lost (another replica took it over).
 */
export async function recoverNextBatch(
  db: Knex,
  claim: RecoveryRow,
  batch: number,
  leaseMs: number,
): Promise<{ queued: number; done: boolean } | null> {
  return db.transaction(async (trx) => {
    const held = await trx
      .withSchema(S)
      .table("recoveries")
      .where({ id: claim.id, claim_token: claim.claim_token })
      .forUpdate()
      .first<(RecoveryRow & { after_at: string | null }) | undefined>(
        "*",
        trx.raw(`${exactTimestamp("after_created_at")} AS after_at`),
      );
    if (!held) return null;
    const walkedTo: WalkPosition = { at: held.after_at, id: Number(held.after_delivery_id) };
    // Held against a disabling (webhooks.active-subscription.ts): a disabled subscription's
    // recovery stops here, since nothing would send what it queues.
    const subscription = await trx
      .withSchema(S)
      .table("subscriptions")
      .where({ id: held.subscription_id })
      .forShare()
      .first<{ status: string } | undefined>("status");
    if (subscription?.status !== "active") {
      await finish(trx, held.id, { examined: 0, queued: 0 }, walkedTo);
      return { queued: 0, done: true };
    }
    // In (created_at, id) order: a range of deliveries_by_subscription_created, however long the window.
    const walked = await trx
      .withSchema(S)
      .table("deliveries")
      .where("subscription_id", held.subscription_id)
      .andWhere("created_at", ">=", held.since)
      .andWhere("created_at", "<", held.until)
      .modify((q) => {
        if (walkedTo.at !== null) q.andWhereRaw("(created_at, id) > (?::timestamptz, ?)", [walkedTo.at, walkedTo.id]);
      })
      .orderBy([{ column: "created_at" }, { column: "id" }])
      .limit(batch)
      .select<{ id: number | string; at: string }[]>("id", trx.raw(`${exactTimestamp("created_at")} AS at`));
    const ids = walked.map((r) => Number(r.id));
    const queued = ids.length === 0 ? 0 : await queueAgain(trx, ids, held.all_deliveries);
    const done = ids.length < batch;
    const last = walked.at(-1);
    const after: WalkPosition = last ? { at: last.at, id: Number(last.id) } : walkedTo;
    if (done) await finish(trx, held.id, { examined: ids.length, queued }, after);
    else
      await trx
        .withSchema(S)
        .table("recoveries")
        .where({ id: held.id })
        .update({
          ...progress(trx, { examined: ids.length, queued }, after),
          claimed_until: trx.raw("now() + ? * interval '1 millisecond'", [leaseMs]),
        });
    return { queued, done };
  });
}

/**
 * Queues again those of the deliveries `ids` that are settled (and, unless `allDeliveries`, did
 * not succeed), out of their per-entity lines: they hold up no newer delivery (webhooks.ordering.ts).
 * By id first, and the statuses said of the updated row only with IS DISTINCT FROM: `status <>
 * 'pending'` said of the table would let the planner read every delivery that has not succeeded
 * instead (webhooks.deliveries-by-id.ts). Resolves to how many were queued.
 */
async function queueAgain(trx: Knex.Transaction, ids: readonly number[], allDeliveries: boolean): Promise<number> {
  const { rows } = await trx.raw<{ rows: { id: string }[] }>(
    `WITH ${deliveriesByIds("w", "id")}
     UPDATE ??.deliveries d
        SET status = 'pending', attempt_count = 0, next_attempt_at = now(), claim_token = NULL,
            next_trigger = 'recovery', sequence = NULL, updated_at = now()
       FROM w
      WHERE d.id = w.id AND d.status IS DISTINCT FROM 'pending'
        ${allDeliveries ? "" : "AND d.status IS DISTINCT FROM 'succeeded'"}
     RETURNING d.id`,
    [[...ids], S],
  );
  return rows.length;
}

interface BatchCounts {
  examined: number;
  queued: number;
}

/** The last delivery a recovery's walk examined: its exact created_at (null before the first) and id. */
interface WalkPosition {
  at: string | null;
  id: number;
}

function progress(trx: Knex.Transaction, counts: BatchCounts, after: WalkPosition) {
  return {
    after_delivery_id: after.id,
    after_created_at: after.at === null ? null : trx.raw("?::timestamptz", [after.at]),
    examined: trx.raw("examined + ?", [counts.examined]),
    queued: trx.raw("queued + ?", [counts.queued]),
  };
}

async function finish(trx: Knex.Transaction, id: number, counts: BatchCounts, after: WalkPosition): Promise<void> {
  await trx
    .withSchema(S)
    .table("recoveries")
    .where({ id })
    .update({
      ...progress(trx, counts, after),
      status: "done",
      finished_at: trx.fn.now(),
      claim_token: null,
      claimed_until: null,
    });
}

/**
 * Deletes up to `limit` recoveries finished more than `olderThanMs` ago (retention: their
 * deliveries, which they only queued again, follow their own). Unfinished ones always stay.
 */
export async function pruneFinishedRecoveries(db: Db, olderThanMs: number, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `WITH gone AS (
       DELETE FROM ??.recoveries WHERE id IN (
         SELECT id FROM ??.recoveries
          WHERE status = 'done' AND finished_at < now() - ?::bigint * interval '1 millisecond'
          ORDER BY finished_at LIMIT ?)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [S, S, olderThanMs, limit],
  );
  return rows[0]?.n ?? 0;
}
