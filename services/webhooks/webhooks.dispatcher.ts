/**
 * The dispatcher: keeps up to WEBHOOK_DISPATCH_BATCH deliveries in flight. It claims due
 * deliveries (webhooks.repository.ts `claimDue`: SKIP LOCKED and a lease, committed before
 * sending), sends each, records every attempt and schedules the next one in the row. Any
 * number of webhooks processes run one each and share the work; a delivery is never sent by
 * two of them at once, and one whose dispatcher died is sent again once its lease ends.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { observeWebhookAttempt, type WebhookAttemptOutcome } from "../../shared/metrics";
import { withRequestId } from "../../shared/request-context";
import { WakeableSleep } from "../../shared/wakeable-sleep";
import * as repo from "./webhooks.repository";
import { retryDelayMs } from "./webhooks.schedule";
import type { AttemptOutcome, OutgoingWebhook } from "./webhooks.sender";

export interface DispatcherOptions {
  db: Knex;
  logger: Service["logger"];
  send(webhook: OutgoingWebhook): Promise<AttemptOutcome>;
  batch: number;
  intervalMs: number;
  timeoutMs: number;
  retryScheduleSeconds: readonly number[];
}

/**
 * How long a claim holds a delivery: its attempt times out after `timeoutMs`, so twice that
 * plus a margin leaves room to record the outcome; only a dispatcher that died (or stalled
 * far beyond its time-out) lets a lease run out while its attempt is still going.
 */
export function leaseMsFor(timeoutMs: number): number {
  return 2 * timeoutMs + 2_000;
}

/** The delivery's next state after an attempt that ended this way. */
export function nextState(outcome: AttemptOutcome, attemptsMade: number, schedule: readonly number[]): repo.DeliveryUpdate {
  switch (outcome.kind) {
    case "delivered":
      return { status: "succeeded", retryInMs: null };
    case "refused":
      return { status: "refused", retryInMs: null };
    default: {
      const retryInMs = retryDelayMs(attemptsMade, schedule);
      return retryInMs === null ? { status: "failed", retryInMs: null } : { status: "pending", retryInMs };
    }
  }
}

const METRIC_OUTCOME: Record<AttemptOutcome["kind"], WebhookAttemptOutcome> = {
  delivered: "delivered",
  rejected: "http_error",
  timeout: "timeout",
  error: "network_error",
  refused: "blocked",
};

export class Dispatcher {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly sleep = new WakeableSleep();
  private readonly inFlight = new Set<Promise<void>>();
  /** The last claim filled every free slot, so more may be due as soon as slots free up. */
  private moreDue = false;
  private readonly leaseMs: number;

  constructor(private readonly opts: DispatcherOptions) {
    this.leaseMs = leaseMsFor(opts.timeoutMs);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops claiming, then waits for the attempts under way to be sent and recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.sleep.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  /** New deliveries are due: look now rather than at the next round. */
  wake(): void {
    this.sleep.wake();
  }

  private async run(): Promise<void> {
    while (this.running) {
      const free = this.opts.batch - this.inFlight.size;
      if (free > 0) {
        let claimed: repo.ClaimedDelivery[] = [];
        try {
          claimed = await repo.claimDue(this.opts.db, free, this.leaseMs);
        } catch (err) {
          this.opts.logger.warn(`Webhook dispatcher: claiming deliveries failed, will retry: ${(err as Error).message}`);
        }
        for (const delivery of claimed) this.launch(delivery);
        this.moreDue = claimed.length === free;
      }
      if (this.running) await this.sleep.sleep(this.opts.intervalMs);
    }
  }

  private launch(delivery: repo.ClaimedDelivery): void {
    // Log lines of the attempt name the request that raised the event.
    const attempt = withRequestId(delivery.request_id, () => this.attempt(delivery)).finally(() => {
      this.inFlight.delete(attempt);
      // Under load, claim again once half the slots are free: one query per chunk, not per delivery.
      if (this.moreDue && this.inFlight.size <= this.opts.batch / 2) this.sleep.wake();
    });
    this.inFlight.add(attempt);
  }

  private async attempt(delivery: repo.ClaimedDelivery): Promise<void> {
    const attemptedAt = new Date();
    const outcome = await this.opts.send({
      url: delivery.url, event: delivery.event, key: delivery.key, secret: delivery.secret, webhookId: delivery.webhook_id, body: delivery.body,
    });
    observeWebhookAttempt(METRIC_OUTCOME[outcome.kind], outcome.durationMs / 1000);
    const next = nextState(outcome, delivery.attempt_count + 1, this.opts.retryScheduleSeconds);
    const record: repo.AttemptRecord = {
      attemptedAt,
      statusCode: outcome.kind === "delivered" || outcome.kind === "rejected" ? outcome.statusCode : null,
      error: "error" in outcome ? outcome.error : null,
      durationMs: outcome.durationMs,
    };
    try {
      await repo.recordAttempt(this.opts.db, delivery, record, next);
    } catch (err) {
      // The lease runs out and the delivery is sent again: at least once, never lost.
      this.opts.logger.warn(`Webhook dispatcher: recording delivery ${delivery.id} failed: ${(err as Error).message}`);
    }
    // One line per attempt, under the request id that raised the event (never the key or secret).
    this.opts.logger.info({
      deliveryId: delivery.id, webhookId: delivery.webhook_id, event: delivery.event, attempt: delivery.attempt_count + 1,
      outcome: outcome.kind, statusCode: record.statusCode, durationMs: outcome.durationMs, next: next.status,
    }, "webhook attempt");
    if (next.status === "failed") this.opts.logger.warn(`Webhook delivery ${delivery.id} (${delivery.webhook_id}) failed for good after ${delivery.attempt_count + 1} attempts.`);
  }
}
