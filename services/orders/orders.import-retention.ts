/**
 * Imports are kept ORDER_IMPORT_RETENTION after they ended (their results with them), then
 * pruned once per RETENTION_INTERVAL across the replicas, like the outbox; an upload a crash
 * cut off goes as soon as its lease ran out.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { PeriodicJob, pruneInBatches } from "../../shared/database/periodic-job";
import { countPrunedRows } from "../../shared/observability/metrics";
import { pruneImports } from "./orders.imports.repository";

export function importRetentionJob(opts: {
  db: Knex;
  logger: Service["logger"];
  retentionMs: number;
  everyMs: number;
  ready: () => boolean;
}): PeriodicJob {
  return new PeriodicJob({
    ready: opts.ready,
    db: opts.db,
    schema: "orders",
    job: "order import retention",
    everyMs: opts.everyMs,
    logger: opts.logger,
    run: async (keepGoing) => {
      const pruned = await pruneInBatches((limit) => pruneImports(opts.db, opts.retentionMs, limit), keepGoing);
      countPrunedRows("orders.order_imports", pruned);
      if (pruned > 0) opts.logger.info(`Order import retention: pruned ${pruned} imports.`);
    },
  });
}
