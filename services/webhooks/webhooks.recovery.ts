/**
 * Recovery after an outage (POST /api/v1/webhooks/{id}/recover): a job row per request, worked
 * on in the background by whichever webhooks replica claims it first. It walks the window's
 * deliveries in the order they were made (created_at, then id) in short batches, queues again
 * those that did not succeed (or all), and records how far it got, so its progress can be read
 * and a replica that dies mid-way leaves the rest to another once its lease ends. The deliveries themselves go out through the
 * dispatcher like any other.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { JobLoop } from "../../shared/polling-loop";
import {
  claimRecovery,
  recoverNextBatch,
  type RecoveryRequest,
  type RecoveryRow,
} from "./webhooks.recoveries.repository";

/** Deliveries looked at per transaction: short enough to hold no lock for long. */
const BATCH = 500;
/** A claim lasts this long past each batch; only a replica that died lets it run out. */
const LEASE_MS = 30_000;
/**
 * How often an idle recoverer looks for a recovery to work on. The replica that takes a request
 * wakes its own recoverer at once (webhooks.worker.ts `recoveryAsked`), so the look only finds
 * a recovery whose replica died (after its lease) or stopped: it was the dispatch interval
 * (250 ms), a claim statement four times a second in every idle webhooks process (issue 23).
 */
export const RECOVERY_LOOK_MS = 2_000;

export interface RecovererOptions {
  db: Knex;
  logger: Service["logger"];
  /** How often an idle recoverer looks (RECOVERY_LOOK_MS). */
  intervalMs: number;
  /** Deliveries were queued again: the dispatcher should look now. */
  queued(): void;
}

export class Recoverer extends JobLoop<RecoveryRow> {
  constructor(private readonly opts: RecovererOptions) {
    super({ name: "Webhook recovery", logger: opts.logger, intervalMs: opts.intervalMs });
  }

  protected claim(): Promise<RecoveryRow | undefined> {
    return claimRecovery(this.opts.db, LEASE_MS);
  }

  /** Batch after batch until the window is done, the claim is lost, or the process stops (the lease then hands it on). */
  protected async work(recovery: RecoveryRow): Promise<void> {
    while (this.running) {
      const step = await recoverNextBatch(this.opts.db, recovery, BATCH, LEASE_MS);
      if (!step) return;
      if (step.queued > 0) this.opts.queued();
      if (step.done) {
        this.opts.logger.info(
          { recoveryId: recovery.id, subscriptionId: recovery.subscription_id },
          "webhook recovery done",
        );
        return;
      }
    }
  }
}

/** Whether an unfinished recovery is the one this request asks for (then it is answered again). */
export function sameRecoveryRequest(row: RecoveryRow, asked: RecoveryRequest): boolean {
  return (
    row.since.getTime() === asked.since.getTime() &&
    (row.requested_until?.getTime() ?? null) === (asked.until?.getTime() ?? null) &&
    row.all_deliveries === asked.all
  );
}
