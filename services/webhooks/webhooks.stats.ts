/**
 * A subscription's health as `GET /api/v1/webhooks/{id}/stats` shows it (docs/webhooks.md,
 * "Endpoint health"): its attempts over a recent window, its backlog, and its latest success
 * and failure, kept on the subscription so that they outlive retention.
 */
import type { Db } from "../../shared/database/db";
import type { SubscriptionRow } from "./webhooks.subscriptions.repository";

const S = "webhooks";

/** The window the rates and latencies cover. */
export const STATS_WINDOW_MS = 24 * 3_600_000;

export interface SubscriptionStats {
  id: number;
  status: SubscriptionRow["status"];
  window: {
    hours: number;
    attempts: number;
    succeeded: number;
    /** succeeded / attempts; null without attempts. */
    successRate: number | null;
    /** Attempt durations in milliseconds; null without attempts. */
    latencyMs: { p50: number; p95: number; max: number } | null;
  };
  /** Deliveries waiting to be sent. */
  backlog: number;
  lastSuccessAt: string | null;
  lastFailure: { at: string; statusCode: number | null; error: string | null } | null;
  /** Since when every attempt failed; null after a success. */
  failingSince: string | null;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

export function presentStats(row: SubscriptionRow, s: SubscriptionStatsRow): SubscriptionStats {
  const latencyMs =
    s.attempts > 0
      ? { p50: Math.round(Number(s.p50_ms)), p95: Math.round(Number(s.p95_ms)), max: Number(s.max_ms) }
      : null;
  return {
    id: row.id,
    status: row.status,
    window: {
      hours: STATS_WINDOW_MS / 3_600_000,
      attempts: s.attempts,
      succeeded: s.succeeded,
      successRate: s.attempts > 0 ? s.succeeded / s.attempts : null,
      latencyMs,
    },
    backlog: s.pending,
    lastSuccessAt: iso(row.last_success_at),
    lastFailure: row.last_failure_at
      ? {
          at: row.last_failure_at.toISOString(),
          statusCode: row.last_failure_status_code,
          error: row.last_failure_error,
        }
      : null,
    failingSince: iso(row.failing_since),
  };
}

export interface SubscriptionStatsRow {
  attempts: number;
  succeeded: number;
  p50_ms: number | null;
  p95_ms: number | null;
  max_ms: number | null;
  pending: number;
}

/**
 * A subscription's attempts over the last `windowMs` (count, successes, latency percentiles)
 * and its backlog. Only deliveries touched within the window can have attempts in it
 * (`updated_at` moves with every attempt), which bounds what is read.
 */
export async function subscriptionStats(
  db: Db,
  subscriptionId: number,
  windowMs: number,
): Promise<SubscriptionStatsRow> {
  const { rows } = await db.raw<{ rows: SubscriptionStatsRow[] }>(
    `WITH recent AS (
       SELECT a.status_code, a.duration_ms FROM ??.deliveries d JOIN ??.attempts a ON a.delivery_id = d.id
        WHERE d.subscription_id = ? AND d.updated_at >= now() - ?::bigint * interval '1 millisecond'
          AND a.attempted_at >= now() - ?::bigint * interval '1 millisecond'
     )
     SELECT count(*)::int AS attempts,
            count(*) FILTER (WHERE status_code BETWEEN 200 AND 299)::int AS succeeded,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50_ms,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95_ms,
            max(duration_ms) AS max_ms,
            (SELECT count(*)::int FROM ??.deliveries WHERE subscription_id = ? AND status = 'pending') AS pending
       FROM recent`,
    [S, S, subscriptionId, windowMs, windowMs, S, subscriptionId],
  );
  return rows[0];
}
