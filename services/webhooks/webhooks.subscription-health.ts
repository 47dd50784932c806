/**
 * A subscription's delivery health (docs/webhooks.md, "Endpoint health"): after each batch of
 * attempts, its latest success and failure and since when it fails are kept on it, a throttled
 * endpoint is paused and a subscription is disabled, as the retry policy says
 * (webhooks.retry-policy.ts).
 *
 * Disabling cancels the subscription's pending deliveries (kept in the log; a recovery queues
 * them again once it is enabled) and, in the same transaction, appends `webhook_endpoint_disabled` to this
 * service's outbox: the owner's other subscriptions to that event hear of it like any event.
 */
import type { Knex } from "knex";
import { ExpiringCache } from "../../shared/expiring-cache";
import type { WebhookHealthFigures } from "../../shared/observability/metrics";
import { WORST_RANKS } from "../../shared/observability/metrics";
import { appendEvent } from "../../shared/messaging/outbox";
import type { Db } from "../../shared/database/db";
import type { AttemptRecord } from "./webhooks.attempts.repository";
import { cancelPendingDeliveries, type ClaimedDelivery } from "./webhooks.deliveries.repository";
import { announcingRecoveries } from "./webhooks.operational-events";
import { markDisabled, type SubscriptionRow, type SubscriptionStatus } from "./webhooks.subscriptions.repository";
import { presentSubscription } from "./webhooks.representation";
import { disablingReason, type DisabledReason, type Verdict } from "./webhooks.retry-policy";

const S = "webhooks";

/** Why a subscription is disabled: what its endpoint answered (the retry policy's reasons), or its owner asked. */
export type DisablingCause = DisabledReason | "owner";

const REASON_TEXT: Record<DisablingCause, string> = {
  gone: "The endpoint answered 410 Gone.",
  failing: "Every attempt failed for longer than the service allows (WEBHOOK_DISABLE_AFTER).",
  owner: "Disabled by its owner (POST /api/v1/webhooks/{id}/disable).",
};

/**
 * Disables an active subscription, cancels its pending deliveries and tells its owner, in one
 * transaction; resolves to the disabled row, or undefined when it was not active (already
 * disabled, or deleted): a subscription is disabled and announced once. The one way to disable,
 * whoever decides it (subscription health, or the owner's POST /webhooks/{id}/disable).
 */
export async function disableSubscription(
  db: Knex,
  subscriptionId: number,
  reason: DisablingCause,
): Promise<SubscriptionRow | undefined> {
  return db.transaction(async (trx) => {
    const row = await markDisabled(trx, subscriptionId, REASON_TEXT[reason]);
    if (!row) return undefined;
    await cancelPendingDeliveries(trx, subscriptionId);
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
  /** How long a subscription must have failed for its next success to announce `webhook_endpoint_recovered`. */
  recoveredAfterMs: number;
}

/** One recorded attempt as health reads it. */
export interface NotedAttempt {
  delivery: Pick<ClaimedDelivery, "subscription_id" | "endpoint">;
  verdict: Verdict;
  /** What health reads of it: when, and how it failed. */
  attempt: Pick<AttemptRecord, "attemptedAt" | "statusCode" | "error" | "durationMs">;
}

/** What a batch of attempts says about each subscription: the latest success and failure, and since when it fails. */
export function summarize(noted: readonly NotedAttempt[]): SubscriptionHealthNote[] {
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
 * successes: a healthy subscription's `last_success_at` is kept to within 10 s, and its row is
 * not rewritten (nor a statement run) for every batch of outcomes. A failure is always noted,
 * and makes the next success noted at once. At 1 s, 10 subscriptions sent 50 deliveries a
 * second by two processes rewrote a subscription row for every third delivery
 * (bench:delivery-writes --rate 5: 0.3 rows updated per delivery); at 10 s, one in thirty.
 */
export const SUCCESS_NOTED_FOR_MS = 10_000;
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
      if (verdict.kind === "throttled") await pauseEndpoint(db, delivery.endpoint, verdict.waitMs);
    }
    const notes = this.worthNoting(summarize(noted));
    const figures = await announcingRecoveries(db, notes, this.opts.recoveredAfterMs, (noting) =>
      noteAttemptsHealth(noting, notes, this.opts.disableAfterMs),
    );
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
  private worthNoting(notes: SubscriptionHealthNote[]): SubscriptionHealthNote[] {
    const worth = notes.filter((n) => n.lastFailure !== null || this.successNoted.get(n.subscriptionId) === undefined);
    for (const n of worth) {
      if (n.lastFailure === null) this.successNoted.set(n.subscriptionId, true);
      else this.successNoted.delete(n.subscriptionId);
    }
    return worth;
  }
}

// ---- its SQL -------------------------------------------------------------------------------

/** The endpoint gets no attempt before `waitMs` from now (a later pause already there stands). */
export async function pauseEndpoint(db: Db, endpoint: string, waitMs: number): Promise<void> {
  await db.raw(
    `INSERT INTO ??.endpoint_pauses AS p (endpoint, until) VALUES (?, now() + ?::bigint * interval '1 millisecond')
     ON CONFLICT (endpoint) DO UPDATE SET until = greatest(p.until, excluded.until)`,
    [S, endpoint, waitMs],
  );
}

/** What a batch of attempts says about one subscription (webhooks.subscription-health.ts `summarize`). */
export interface SubscriptionHealthNote {
  subscriptionId: number;
  /** The latest successful attempt's time, if any succeeded. */
  lastSuccessAt: Date | null;
  /** The latest failed attempt, if any failed. */
  lastFailure: { at: Date; statusCode: number | null; error: string | null } | null;
  /** The first failure after the batch's last success; null when the latest attempt succeeded. */
  failingFrom: Date | null;
}

/**
 * Keeps each subscription's latest figures after a batch of attempts, in one statement: last
 * success, last failure with its status code, and since when every attempt failed. Says, per
 * subscription, whether that run of failures has lasted `disableAfterMs`. The rows are locked
 * in id order first, so two dispatchers' batches never wait on each other in a circle, and
 * FOR NO KEY UPDATE (what the UPDATE itself takes), not FOR UPDATE: that one conflicts with the
 * key-share locks a fan-out's delivery inserts take on their subscriptions (the foreign key),
 * and the bench saw both deadlock.
 */
export async function noteAttemptsHealth(
  db: Db,
  notes: readonly SubscriptionHealthNote[],
  disableAfterMs: number,
): Promise<{ subscriptionId: number; status: SubscriptionStatus; failingTooLong: boolean }[]> {
  if (notes.length === 0) return [];
  const rows = notes.map((n) => ({
    id: n.subscriptionId,
    last_success_at: n.lastSuccessAt?.toISOString() ?? null,
    last_failure_at: n.lastFailure?.at.toISOString() ?? null,
    status_code: n.lastFailure?.statusCode ?? null,
    error: n.lastFailure?.error ?? null,
    failing_from: n.failingFrom?.toISOString() ?? null,
  }));
  const { rows: noted } = await db.raw<{
    rows: { id: number; status: SubscriptionStatus; failing_too_long: boolean }[];
  }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb)
         AS i(id int, last_success_at timestamptz, last_failure_at timestamptz, status_code int, error text, failing_from timestamptz)
     ), locked AS (
       SELECT s.id FROM ??.subscriptions s WHERE s.id IN (SELECT id FROM input) ORDER BY s.id FOR NO KEY UPDATE
     )
     UPDATE ??.subscriptions s
        SET last_success_at = coalesce(i.last_success_at, s.last_success_at),
            last_failure_at = coalesce(i.last_failure_at, s.last_failure_at),
            last_failure_status_code = CASE WHEN i.last_failure_at IS NULL THEN s.last_failure_status_code ELSE i.status_code END,
            last_failure_error = CASE WHEN i.last_failure_at IS NULL THEN s.last_failure_error ELSE i.error END,
            failing_since = CASE WHEN i.failing_from IS NULL THEN NULL
                                 WHEN i.last_success_at IS NOT NULL THEN i.failing_from
                                 ELSE coalesce(s.failing_since, i.failing_from) END
       FROM input i
      WHERE s.id = i.id AND s.id IN (SELECT id FROM locked)
      RETURNING s.id, s.status, coalesce(s.failing_since <= now() - ?::bigint * interval '1 millisecond', false) AS failing_too_long`,
    [JSON.stringify(rows), S, S, disableAfterMs],
  );
  return noted.map((r) => ({ subscriptionId: r.id, status: r.status, failingTooLong: r.failing_too_long }));
}

/**
 * The figures /metrics shows, with bounded labels (shared/observability/metrics.ts): every
 * subscription's state, the backlog, and how long the WORST_RANKS longest-failing ones have failed.
 */
export async function healthFigures(db: Db): Promise<WebhookHealthFigures> {
  const {
    rows: [states],
  } = await db.raw<{ rows: { healthy: number; failing: number; disabled: number }[] }>(
    `SELECT count(*) FILTER (WHERE status = 'active' AND failing_since IS NULL)::int AS healthy,
            count(*) FILTER (WHERE status = 'active' AND failing_since IS NOT NULL)::int AS failing,
            count(*) FILTER (WHERE status = 'disabled')::int AS disabled
       FROM ??.subscriptions`,
    [S],
  );
  const {
    rows: [backlog],
  } = await db.raw<{ rows: { pending: number; oldest_seconds: number | null }[] }>(
    `SELECT count(*)::int AS pending, extract(epoch FROM now() - min(created_at))::float8 AS oldest_seconds
       FROM ??.deliveries WHERE status = 'pending'`,
    [S],
  );
  const { rows: failing } = await db.raw<{ rows: { seconds: number }[] }>(
    `SELECT extract(epoch FROM now() - failing_since)::float8 AS seconds FROM ??.subscriptions
      WHERE status = 'active' AND failing_since IS NOT NULL ORDER BY failing_since LIMIT ?`,
    [S, WORST_RANKS],
  );
  return {
    subscriptions: states,
    pendingDeliveries: backlog.pending,
    oldestPendingAgeSeconds: Math.max(0, backlog.oldest_seconds ?? 0),
    worstFailingSeconds: failing.map((r) => r.seconds),
  };
}
