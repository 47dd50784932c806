/**
 * Group commit of attempt outcomes: the attempts that end while a write is under way (or within
 * a few milliseconds of each other) are recorded together — their delivery states and attempt
 * rows in one statement, their subscriptions' health figures in one more — instead of one
 * statement, and one transaction, per attempt. Under load PostgreSQL then commits once per
 * batch, not once per delivery.
 *
 * Nothing is weaker for it: an attempt counts as finished (its slot is freed) only once its
 * batch is written; a batch that fails to write leaves its claims to expire, and those
 * deliveries are sent again (at least once, never lost), exactly as a single failed write did.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import type { DisabledReason, EndpointHealth, NotedAttempt } from "./webhooks.health";
import * as repo from "./webhooks.repository";

/** How long the first outcome of a batch waits for others: far below an attempt's own duration. */
const LINGER_MS = 5;
/** Outcomes per statement at most: keeps each statement short however deep the backlog. */
const MAX_BATCH = 200;

/** An attempt that ended: what to record of it, and what health reads from it. */
export interface FinishedAttempt extends NotedAttempt {
  delivery: repo.ClaimedDelivery;
  next: repo.DeliveryUpdate;
}

interface Waiting {
  finished: FinishedAttempt;
  done: () => void;
}

export interface OutcomeRecorderOptions {
  db: Knex;
  logger: Service["logger"];
  health: EndpointHealth;
}

export class OutcomeRecorder {
  private queue: Waiting[] = [];
  private writing = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: OutcomeRecorderOptions) {}

  /** Resolves once the outcome is written, or its write failed and was logged: it never rejects. */
  record(finished: FinishedAttempt): Promise<void> {
    return new Promise((done) => {
      this.queue.push({ finished, done });
      if (this.queue.length >= MAX_BATCH) this.flushSoon(0);
      else this.flushSoon(LINGER_MS);
    });
  }

  private flushSoon(delayMs: number): void {
    if (this.writing) return; // the write under way flushes again when it ends
    if (this.timer && delayMs > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flush(), delayMs);
  }

  private async flush(): Promise<void> {
    this.timer = null;
    if (this.writing || this.queue.length === 0) return;
    this.writing = true;
    const batch = this.queue.splice(0, MAX_BATCH);
    try {
      await this.write(batch.map((w) => w.finished));
    } finally {
      this.writing = false;
      for (const w of batch) w.done();
      if (this.queue.length > 0) this.flushSoon(0);
    }
  }

  private async write(batch: FinishedAttempt[]): Promise<void> {
    try {
      await repo.recordAttempts(this.opts.db, batch.map((f) => ({ claim: f.delivery, attempt: f.attempt, next: f.next })));
    } catch (err) {
      // The leases run out and these deliveries are sent again: at least once, never lost.
      this.opts.logger.warn(`Webhook dispatcher: recording ${batch.length} attempts (deliveries ${batch.map((f) => f.delivery.id).join(", ")}) failed: ${(err as Error).message}`);
      return;
    }
    await this.noteHealth(batch);
  }

  /** Their figures, a Retry-After pause, a disabling: a failure here costs freshness, never a delivery. */
  private async noteHealth(batch: FinishedAttempt[]): Promise<void> {
    let disabled: { subscriptionId: number; reason: DisabledReason }[];
    try {
      disabled = await this.opts.health.afterAttempts(batch);
    } catch (err) {
      this.opts.logger.warn(`Webhook dispatcher: noting the health of ${batch.length} attempts failed: ${(err as Error).message}`);
      return;
    }
    for (const { subscriptionId, reason } of disabled) {
      this.opts.logger.warn(`Webhook subscription ${subscriptionId} disabled (${reason}); its owner is told by webhook_endpoint_disabled.`);
    }
  }
}
