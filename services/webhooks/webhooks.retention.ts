/**
 * Retention (docs/webhooks.md, "Retention"): deliveries settled (succeeded, failed, refused,
 * cancelled) for WEBHOOK_RETENTION are pruned with their attempts, then the events no delivery
 * needs any more. Pending deliveries are never pruned: a failed one counts from its last attempt
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
import * as repo from "./webhooks.repository";

export interface RetentionOptions {
  db: Knex;
  logger: Service["logger"];
  retentionMs: number;
  everyMs: number;
  /** See PeriodicJobOptions.ready. */
  ready?: () => boolean;
}

export interface Pruned {
  deliveries: number;
  attempts: number;
  events: number;
}

/** One pass over everything due; resolves to the rows removed. */
export async function pruneWebhooks(
  db: Knex,
  retentionMs: number,
  keepGoing: () => boolean = () => true,
): Promise<Pruned> {
  let attempts = 0;
  const deliveries = await pruneInBatches(async (limit) => {
    const pruned = await repo.pruneSettledDeliveries(db, retentionMs, limit);
    attempts += pruned.attempts;
    return pruned.deliveries;
  }, keepGoing);
  // After the deliveries: only then are their events free to go.
  const events = keepGoing()
    ? await pruneInBatches((limit) => repo.pruneUnusedEvents(db, retentionMs, limit), keepGoing)
    : 0;
  return { deliveries, attempts, events };
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
      if (pruned.deliveries + pruned.events > 0) {
        opts.logger.info(
          `Webhooks retention: pruned ${pruned.deliveries} deliveries, ${pruned.attempts} attempts and ${pruned.events} events.`,
        );
      }
    },
  });
}
