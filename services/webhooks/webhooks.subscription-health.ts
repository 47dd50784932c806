/**
 * A subscription's delivery health (docs/webhooks.md, "Endpoint health"): after each batch of
 * attempts, its latest success and failure and since when it fails are kept on it, a throttled
 * endpoint is paused and a subscription is disabled, as the retry policy says
 * (webhooks.retry-policy.ts).
 *
 * Disabling fails the subscription's pending deliveries (they can be recovered once it is
 * enabled again) and, in the same transaction, appends `webhook_endpoint_disabled` to this
 * service's outbox: the owner's other subscriptions to that event hear of it like any event.
 */
import type { Knex } from "knex";
import { ExpiringCache } from "../../shared/expiring-cache";
import type { WebhookHealthFigures } from "../../shared/observability/metrics";
import { WORST_RANKS } from "../../shared/observability/metrics";
import { appendEvent } from "../../shared/messaging/outbox";
import * as repo from "./webhooks.repository";
import { presentSubscription } from "./webhooks.representation";
import { disablingReason, type DisabledReason, type Verdict } from "./webhooks.retry-policy";

const REASON_TEXT: Record<DisabledReason, string> = {
  gone: "The endpoint answered 410 Gone.",
  failing: "Every attempt failed for longer than the service allows (WEBHOOK_DISABLE_AFTER).",
};

/**
 * Disables an active subscription, fails its pending deliveries and tells its owner, in one
 * transaction; resolves to the disabled row, or undefined when it was not active (already
 * disabled, or deleted): a subscription is disabled and announced once.
 */
export async function disableSubscription(
  db: Knex,
  subscriptionId: number,
  reason: DisabledReason,
): Promise<repo.SubscriptionRow | undefined> {
  return db.transaction(async (trx) => {
    const row = await repo.markDisabled(trx, subscriptionId, REASON_TEXT[reason]);
    if (!row) return undefined;
    await repo.failPendingDeliveries(trx, subscriptionId);
    await appendEvent(trx, "webhooks", {
      event: "webhook_endpoint_disabled",
      ownerClientId: row.client_id,
      entityId: row.id,
      data: presentSubscription(row),
    });
    return row;
  });
}

export interface SubscriptionHealthOptions {
  db: Knex;
  /** WEBHOOK_DISABLE_AFTER: how long every attempt may fail before the subscription is disabled. */
  disableAfterMs: number;
}

/** One recorded attempt as health reads it. */
export interface NotedAttempt {
  delivery: Pick<repo.ClaimedDelivery, "subscription_id" | "endpoint">;
  verdict: Verdict;
  attempt: repo.AttemptRecord;
}

/** What a batch of attempts says about each subscription: the latest success and failure, and since when it fails. */
export function summarize(noted: readonly NotedAttempt[]): repo.SubscriptionHealthNote[] {
  const bySubscription = new Map<number, NotedAttempt[]>();
  for (const n of noted)
    bySubscription.set(n.delivery.subscription_id, [...(bySubscription.get(n.delivery.subscription_id) ?? []), n]);
  return [...bySubscription].map(([subscriptionId, attempts]) => {
    const inOrder = [...attempts].sort((a, b) => a.attempt.attemptedAt.getTime() - b.attempt.attemptedAt.getTime());
    const succeeded = (n: NotedAttempt) => n.verdict.kind === "healthy";
    const lastSuccess = inOrder.filter(succeeded).at(-1);
    const lastFailure = inOrder.filter((n) => !succeeded(n)).at(-1);
    const sinceLastSuccess = lastSuccess ? inOrder.slice(inOrder.indexOf(lastSuccess) + 1) : inOrder;
    return {
      subscriptionId,
      lastSuccessAt: lastSuccess?.attempt.attemptedAt ?? null,
      lastFailure: lastFailure
        ? {
            at: lastFailure.attempt.attemptedAt,
            statusCode: lastFailure.attempt.statusCode,
            error: lastFailure.attempt.error,
          }
        : null,
      failingFrom: sinceLastSuccess[0]?.attempt.attemptedAt ?? null,
    };
  });
}

/**
 * A subscription whose success this process noted this recently is not noted again for more
 * successes: under load a healthy subscription's `last_success_at` is kept to the second, and
 * its row is not rewritten (nor a statement run) for every batch of outcomes. A failure is
 * always noted, and makes the next success noted at once.
 */
export const SUCCESS_NOTED_FOR_MS = 1_000;
const MAX_NOTED_SUBSCRIPTIONS = 10_000;

/** What the dispatcher calls after recording a batch of attempts (webhooks.outcome-recorder.ts). */
export class SubscriptionHealth {
  private readonly successNoted = new ExpiringCache<number, true>(SUCCESS_NOTED_FOR_MS, MAX_NOTED_SUBSCRIPTIONS);

  constructor(private readonly opts: SubscriptionHealthOptions) {}

  /**
   * Notes the batch's figures in one statement; pauses throttled endpoints and disables what
   * must be (both rare, one statement each). Resolves to the subscriptions disabled, with why.
   */
  async afterAttempts(noted: readonly NotedAttempt[]): Promise<{ subscriptionId: number; reason: DisabledReason }[]> {
    const { db } = this.opts;
    for (const { delivery, verdict } of noted) {
      if (verdict.kind === "throttled") await repo.pauseEndpoint(db, delivery.endpoint, verdict.waitMs);
    }
    const figures = await repo.noteAttemptsHealth(db, this.worthNoting(summarize(noted)), this.opts.disableAfterMs);
    const gone = new Set(noted.filter((n) => n.verdict.kind === "gone").map((n) => n.delivery.subscription_id));
    const disabled: { subscriptionId: number; reason: DisabledReason }[] = [];
    for (const f of figures) {
      if (f.status !== "active") continue;
      const reason = disablingReason({ gone: gone.has(f.subscriptionId), failingTooLong: f.failingTooLong });
      if (reason && (await disableSubscription(db, f.subscriptionId, reason)))
        disabled.push({ subscriptionId: f.subscriptionId, reason });
    }
    return disabled;
  }

  /** Drops the successes noted within SUCCESS_NOTED_FOR_MS; remembers what is noted now. */
  private worthNoting(notes: repo.SubscriptionHealthNote[]): repo.SubscriptionHealthNote[] {
    const worth = notes.filter((n) => n.lastFailure !== null || this.successNoted.get(n.subscriptionId) === undefined);
    for (const n of worth) {
      if (n.lastFailure === null) this.successNoted.set(n.subscriptionId, true);
      else this.successNoted.delete(n.subscriptionId);
    }
    return worth;
  }
}

/** The figures /metrics shows, with bounded labels (shared/observability/metrics.ts). */
export async function healthFigures(db: Knex): Promise<WebhookHealthFigures> {
  return repo.healthFigures(db, WORST_RANKS);
}
