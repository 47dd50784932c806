/**
 * Group commit of attempt outcomes: the attempts that end within LINGER_MS of each other (or
 * while a write is under way) are recorded together — their attempt rows and delivery states in
 * one statement, their subscriptions' health figures in one more — instead of a statement, and
 * a transaction, or two per attempt. A failure is written at once (no linger): it may pause its
 * endpoint or disable its subscription. A batch in which a delivery gives up after its whole
 * schedule is written in one transaction with its `webhook_delivery_exhausted`
 * (webhooks.operational-events.ts).
 *
 * Nothing is weaker for it: until its outcome is written a delivery stays claimed (its lease
 * runs), so nobody sends it again meanwhile; a batch that fails to write leaves its claims to
 * expire, and those deliveries are sent again (at least once, never lost), exactly as a single
 * failed write did. A delivery sent before it was stored (webhooks.send-first.ts) has no claim:
 * its row is inserted here, with its attempt, and until then its event stays unacknowledged in
 * its channel; a batch that fails to write has `record` answer false, and the event is offered
 * again. The dispatcher waits for `drain` when it stops.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import type { SubscriptionHealth, NotedAttempt } from "./webhooks.subscription-health";
import {
  recordAttempts,
  recordFirstAttempts,
  type AttemptRecord,
  type RecordedAttempt,
  type RecordedFirstAttempt,
} from "./webhooks.attempts.repository";
import type { ClaimedDelivery } from "./webhooks.deliveries.repository";
import { announceExhausted, exhaustsSchedule } from "./webhooks.operational-events";
import type { DeliveryUpdate } from "./webhooks.retry-policy";
import { isUnstored } from "./webhooks.send-first";
import { releaseNextOf } from "./webhooks.ordering";
import type { QueuedOutcome } from "./webhooks.late-changes";

/**
 * How long the first outcome of a batch waits for others: far below the lease (twice the
 * attempt time-out), and nothing a subscriber waits for — it received the webhook already.
 */
const LINGER_MS = 50;
/** Outcomes per statement at most: keeps each statement short however deep the backlog. */
const MAX_BATCH = 500;

/** An attempt that ended: what to record of it, and what health reads from it. */
export interface FinishedAttempt extends NotedAttempt {
  delivery: ClaimedDelivery;
  attempt: AttemptRecord;
  next: DeliveryUpdate;
}

interface Queued extends FinishedAttempt {
  written: (ok: boolean) => void;
}

export interface OutcomeRecorderOptions {
  db: Knex;
  logger: Service["logger"];
  health: SubscriptionHealth;
  /** WEBHOOK_ORDERING_HOLD: a per-entity line's next delivery, released, still waits out its own (webhooks.ordering.ts). */
  orderingHoldMs?: number;
  /**
   * Applies to the deliveries an outcome just left queued the changes made while their attempts
   * were in flight (webhooks.late-changes.ts); never rejects.
   */
  changesMissed?: (queued: QueuedOutcome[]) => Promise<void>;
}

export class OutcomeRecorder {
  private queue: Queued[] = [];
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private timerDueAt = 0;

  constructor(private readonly opts: OutcomeRecorderOptions) {}

  /**
   * Queues the outcome; it is written within LINGER_MS, with whatever else ended meanwhile.
   * Resolves once it is written (true; for a failure, its health noted too), or its write
   * failed and was logged (false): it never rejects.
   */
  record(finished: FinishedAttempt): Promise<boolean> {
    return new Promise((written) => {
      this.queue.push({ ...finished, written });
      // A failure may pause its endpoint or disable its subscription: that is written at once, not after a linger.
      const urgent = finished.verdict.kind !== "healthy" || this.queue.length >= MAX_BATCH;
      this.schedule(urgent ? 0 : LINGER_MS);
    });
  }

  /** Writes everything queued; resolves when done. */
  async drain(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.writing || this.queue.length > 0) {
      if (this.writing) await this.writing;
      else await this.flush();
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Flushes in `delayMs`, unless a write under way or an earlier flush will take it. */
  private schedule(delayMs: number): void {
    if (this.writing) return; // it flushes again when it ends
    const dueAt = Date.now() + delayMs;
    if (this.timer && this.timerDueAt <= dueAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDueAt = dueAt;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delayMs);
    // A stopping process does not wait for it: the dispatcher drains the recorder instead.
    this.timer.unref();
  }

  private async flush(): Promise<void> {
    if (this.writing) return;
    const batch = this.queue.splice(0, MAX_BATCH);
    const writing = this.write(batch);
    this.writing = writing.then(() => undefined);
    let ok = false;
    try {
      ok = await writing;
    } finally {
      this.writing = null;
      for (const f of batch) f.written(ok);
      if (this.queue.length > 0) this.schedule(0);
    }
  }

  private async write(batch: Queued[]): Promise<boolean> {
    if (batch.length === 0) return true;
    // Claimed deliveries are updated; those sent before they were stored (webhooks.send-first.ts) are written now.
    const claimed: RecordedAttempt[] = [];
    const first: RecordedFirstAttempt[] = [];
    for (const f of batch) {
      if (isUnstored(f.delivery)) first.push({ claim: f.delivery, attempt: f.attempt, next: f.next });
      else claimed.push({ claim: f.delivery, attempt: f.attempt, next: f.next });
    }
    try {
      const gaveUp = batch.filter(exhaustsSchedule);
      const writeAll = async (db: Knex) => {
        await recordAttempts(db, claimed);
        await recordFirstAttempts(db, first);
      };
      // One statement needs no transaction around it.
      if (gaveUp.length === 0 && (claimed.length === 0 || first.length === 0)) await writeAll(this.opts.db);
      // Announced in the transaction that fails them: the event exists if and only if they failed.
      else
        await this.opts.db.transaction(async (trx) => {
          await writeAll(trx);
          await announceExhausted(trx, gaveUp);
        });
    } catch (err) {
      // The leases run out and these deliveries are sent again, or (sent before they were
      // stored) their events are offered again: at least once, never lost.
      this.opts.logger.warn(
        `Webhook dispatcher: recording ${batch.length} attempts (deliveries ${batch.map((f) => f.delivery.id).join(", ")}) failed: ${(err as Error).message}`,
      );
      return false;
    }
    await this.releaseLines(claimed);
    await this.noteHealth(batch);
    const queued = batch.filter((f) => f.next.status === "pending").map((f) => f.delivery);
    if (queued.length > 0) await this.opts.changesMissed?.(queued);
    return true;
  }

  /**
   * Once the outcomes are committed: the next delivery of each per-entity line one of them
   * settled. A failure here costs that one its wait behind the line (webhooks.ordering.ts), never its order.
   */
  private async releaseLines(recorded: readonly RecordedAttempt[]): Promise<void> {
    const settled = recorded.filter(({ claim, next }) => claim.in_line && next.status !== "pending");
    if (settled.length === 0) return;
    try {
      await releaseNextOf(
        this.opts.db,
        settled.map(({ claim }) => Number(claim.id)),
        this.opts.orderingHoldMs ?? 0,
      );
    } catch (err) {
      this.opts.logger.warn(
        `Webhook dispatcher: releasing the per-entity lines of deliveries ${settled.map(({ claim }) => claim.id).join(", ")} failed: ${(err as Error).message}`,
      );
    }
  }

  /** Their figures, a Retry-After pause, a disabling: a failure here costs freshness, never a delivery. */
  private async noteHealth(batch: Queued[]): Promise<void> {
    try {
      const disabled = await this.opts.health.afterAttempts(batch);
      for (const { subscriptionId, reason } of disabled) {
        this.opts.logger.warn(
          `Webhook subscription ${subscriptionId} disabled (${reason}); its owner is told by webhook_endpoint_disabled.`,
        );
      }
    } catch (err) {
      this.opts.logger.warn(
        `Webhook dispatcher: noting the health of ${batch.length} attempts failed: ${(err as Error).message}`,
      );
    }
  }
}
