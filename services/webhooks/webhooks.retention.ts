/**
 * Retention (docs/webhooks.md, "Retention"): deliveries settled (succeeded, failed, refused,
 * cancelled) for WEBHOOK_RETENTION are pruned with their attempts, then the events no delivery
 * needs any more, and recoveries finished for as long; Idempotency-Keys once their day is over. Pending deliveries are never pruned: a failed one counts from its last attempt
 * or redelivery, so its owner has the whole period to look into it or recover it.
 *
 * Once per RETENTION_INTERVAL across every webhooks replica (shared/database/periodic-job.ts), in
 * batches of PRUNE_BATCH rows per statement, each its own short transaction: the dispatcher
 * and fan-out never wait behind a long delete.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { countPrunedRows } from "../../shared/observability/metrics";
import { PeriodicJob, pruneInBatches } from "../../shared/database/periodic-job";
import type { Db } from "../../shared/database/db";
import { IDEMPOTENCY_KEY_KEEP_MS } from "./webhooks.idempotency";
import { pruneIdempotencyKeys } from "./webhooks.idempotency-keys.repository";
import { pruneFinishedRecoveries } from "./webhooks.recoveries.repository";

const S = "webhooks";

export interface RetentionOptions {
  db: Knex;
  logger: Service["logger"];
  retentionMs: number;
  everyMs: number;
  /** See PeriodicJobOptions.ready. */
  ready?: () => boolean;
}

/** Rows pruned per table. */
export type Pruned = Record<"deliveries" | "attempts" | "events" | "recoveries", number>;

/** One pass over everything due; resolves to the rows removed. */
export async function pruneWebhooks(
  db: Knex,
  retentionMs: number,
  keepGoing: () => boolean = () => true,
): Promise<Pruned> {
  let attempts = 0;
  const deliveries = await pruneInBatches(async (limit) => {
    const pruned = await pruneSettledDeliveries(db, retentionMs, limit);
    attempts += pruned.attempts;
    return pruned.deliveries;
  }, keepGoing);
  // After the deliveries: only then are their events free to go.
  const events = keepGoing()
    ? await pruneInBatches((limit) => pruneUnusedEvents(db, retentionMs, limit), keepGoing)
    : 0;
  const recoveries = keepGoing()
    ? await pruneInBatches((limit) => pruneFinishedRecoveries(db, retentionMs, limit), keepGoing)
    : 0;
  return { deliveries, attempts, events, recoveries };
}

export function webhooksRetentionJob(opts: RetentionOptions): PeriodicJob {
  return new PeriodicJob({
    ready: opts.ready,
    db: opts.db,
    schema: "webhooks",
    job: "webhooks retention",
    everyMs: opts.everyMs,
    logger: opts.logger,
    run: async (keepGoing) => {
      const pruned = await pruneWebhooks(opts.db, opts.retentionMs, keepGoing);
      for (const [table, rows] of Object.entries(pruned)) countPrunedRows(`webhooks.${table}`, rows);
      // Idempotency keys have a lifetime of their own (webhooks.idempotency.ts), not WEBHOOK_RETENTION.
      const keys = keepGoing()
        ? await pruneInBatches((limit) => pruneIdempotencyKeys(opts.db, IDEMPOTENCY_KEY_KEEP_MS, limit), keepGoing)
        : 0;
      countPrunedRows("webhooks.idempotency_keys", keys);
      if (pruned.deliveries + pruned.events + pruned.recoveries > 0) {
        opts.logger.info(
          `Webhooks retention: pruned ${pruned.deliveries} deliveries, ${pruned.attempts} attempts, ${pruned.events} events and ${pruned.recoveries} recoveries.`,
        );
      }
    },
  });
}

/** Rows one pruning statement removed, by table. */
export interface PrunedRows {
  deliveries: number;
  attempts: number;
}

/**
 * Deletes up to `limit` deliveries settled (not pending) more than `olderThanMs` ago, with
 * their attempts, in one statement. A failed delivery counts from its last attempt or
 * redelivery, so it stays the whole period for its owner to look into or recover.
 *
 * Found subscription by subscription, the oldest first in each, on the index the stats read
 * (`deliveries_by_subscription_updated`): an index of its own on `updated_at` would be one more
 * entry written for every delivery, to serve a job that runs once an hour.
 */
export async function pruneSettledDeliveries(db: Db, olderThanMs: number, limit: number): Promise<PrunedRows> {
  const { rows } = await db.raw<{ rows: PrunedRows[] }>(
    `WITH doomed AS (
       SELECT d.id FROM ??.subscriptions s CROSS JOIN LATERAL (
         SELECT id FROM ??.deliveries
          WHERE subscription_id = s.id AND status <> 'pending'
            AND updated_at < now() - ?::bigint * interval '1 millisecond'
          ORDER BY updated_at LIMIT ? FOR UPDATE SKIP LOCKED
       ) d
        LIMIT ?
     ), gone_attempts AS (
       DELETE FROM ??.attempts WHERE delivery_id IN (SELECT id FROM doomed) RETURNING 1
     ), gone AS (
       DELETE FROM ??.deliveries WHERE id IN (SELECT id FROM doomed) RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM gone) AS deliveries, (SELECT count(*)::int FROM gone_attempts) AS attempts`,
    [S, S, olderThanMs, limit, limit, S, S],
  );
  return rows[0];
}

/** Deletes up to `limit` events older than `olderThanMs` that no delivery needs any more. */
export async function pruneUnusedEvents(db: Db, olderThanMs: number, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `WITH gone AS (
       DELETE FROM ??.events WHERE id IN (
         SELECT e.id FROM ??.events e
          WHERE e.received_at < now() - ?::bigint * interval '1 millisecond'
            AND NOT EXISTS (SELECT 1 FROM ??.deliveries d WHERE d.event_id = e.id)
          ORDER BY e.received_at LIMIT ?)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [S, S, olderThanMs, S, limit],
  );
  return rows[0]?.n ?? 0;
}
