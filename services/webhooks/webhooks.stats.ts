/**
 * A subscription's health as `GET /api/v1/webhooks/{id}/stats` shows it (docs/webhooks.md,
 * "Endpoint health"): its attempts over a recent window (24 h or 7 days) and hour by hour or day
 * by day in it, its backlog, and its latest success and failure, kept on the subscription so that
 * they outlive retention.
 */
import type { Db } from "../../shared/database/db";
import type { StatsBucket, StatsWindow } from "./webhooks.params";
import type { SubscriptionRow } from "./webhooks.subscriptions.repository";

const S = "webhooks";

const HOUR_MS = 3_600_000;
export const WINDOW_MS: Record<StatsWindow, number> = { "24h": 24 * HOUR_MS, "7d": 7 * 24 * HOUR_MS };
const BUCKET_MS: Record<StatsBucket, number> = { hour: HOUR_MS, day: 24 * HOUR_MS };
export const DEFAULT_BUCKET: Record<StatsWindow, StatsBucket> = { "24h": "hour", "7d": "day" };

/** One step of the series: the attempts made from `start` for one bucket. */
export interface StatsPoint {
  start: string;
  attempts: number;
  succeeded: number;
  successRate: number | null;
  latencyMs: { p50: number; p95: number } | null;
}

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
  series: { bucket: StatsBucket; points: StatsPoint[] };
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

export function presentStats(
  row: SubscriptionRow,
  s: SubscriptionStatsRow,
  windowMs: number,
  series: SubscriptionStats["series"],
): SubscriptionStats {
  const latencyMs =
    s.attempts > 0
      ? { p50: Math.round(Number(s.p50_ms)), p95: Math.round(Number(s.p95_ms)), max: Number(s.max_ms) }
      : null;
  return {
    id: row.id,
    status: row.status,
    window: {
      hours: windowMs / HOUR_MS,
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
    series,
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

interface BucketRow {
  start: Date;
  attempts: number;
  succeeded: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

/**
 * The series: as many buckets (UTC hours or days) as the window holds, oldest first, the
 * current one (up to now) the last, empty ones as zeros so that a chart has no holes: 24 hours
 * for `24h`, 7 days for `7d`. Read through
 * `deliveries_by_subscription_updated` and `attempts_by_delivery_attempted` (migration
 * 20261215050010_stats_series).
 */
export async function statsSeries(
  db: Db,
  subscriptionId: number,
  windowMs: number,
  bucket: StatsBucket,
  now = Date.now(),
): Promise<SubscriptionStats["series"]> {
  const step = BUCKET_MS[bucket];
  const count = Math.max(1, Math.round(windowMs / step));
  const from = (Math.floor(now / step) - (count - 1)) * step;
  const { rows } = await db.raw<{ rows: BucketRow[] }>(
    `SELECT date_trunc(?, a.attempted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start,
            count(*)::int AS attempts,
            count(*) FILTER (WHERE a.status_code BETWEEN 200 AND 299)::int AS succeeded,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duration_ms) AS p50_ms,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY a.duration_ms) AS p95_ms
       FROM ??.deliveries d JOIN ??.attempts a ON a.delivery_id = d.id
      WHERE d.subscription_id = ? AND d.updated_at >= ? AND a.attempted_at >= ?
      GROUP BY 1`,
    [bucket, S, S, subscriptionId, new Date(from), new Date(from)],
  );
  const byStart = new Map(rows.map((r) => [new Date(r.start).getTime(), r]));
  const points: StatsPoint[] = [];
  for (let start = from; start <= now; start += step) {
    const r = byStart.get(start);
    points.push({
      start: new Date(start).toISOString(),
      attempts: r?.attempts ?? 0,
      succeeded: r?.succeeded ?? 0,
      successRate: r && r.attempts > 0 ? r.succeeded / r.attempts : null,
      latencyMs: r && r.attempts > 0 ? { p50: Math.round(Number(r.p50_ms)), p95: Math.round(Number(r.p95_ms)) } : null,
    });
  }
  return { bucket, points };
}
