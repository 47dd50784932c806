/**
 * `--preload N`: before the measured phases, the run's database is given a history of N settled
 * deliveries, so the bench measures a service that has been running for a while rather than an
 * empty one. The rows are made with SQL (through the service they would take hours): for the
 * bench's own subscriptions, one event per N ÷ subscriptions (the order JSON the subscribers
 * receive), one succeeded delivery per event and subscription with its one attempt (200), dated
 * over the last days so that nothing is due and retention (30 days) keeps them. Then VACUUM
 * ANALYZE, as autovacuum would have by then.
 */
import pg from "pg";

/** Events per statement: a few seconds each, so progress shows and no statement runs for minutes. */
const EVENTS_PER_CHUNK = 10_000;
/** The history spreads over this many days before the run. */
const HISTORY_DAYS = 7;

function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.href;
}

/** A body about as long as the validated orders the bench delivers (~1.5 kB). */
const BODY = `'{"id":' || g || ',"code":"ORD-PRELOAD-' || g || '","status":"validated","note":"' || repeat('x', 1400) || '"}'`;

/**
 * Inserts `deliveries` settled deliveries (rounded down to whole events) across the subscriptions
 * of `event`; `log` reports progress. Resolves to the deliveries inserted.
 */
export async function preloadDeliveries(
  serverUrl: string,
  database: string,
  event: string,
  deliveries: number,
  log: (line: string) => void,
): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl(serverUrl, database) });
  await client.connect();
  try {
    const { rows: subscriptions } = await client.query<{ id: number; client_id: number }>(
      "SELECT id, client_id FROM webhooks.subscriptions WHERE event = $1 ORDER BY id",
      [event],
    );
    if (subscriptions.length === 0) throw new Error(`--preload: no subscription to ${event}`);
    const events = Math.floor(deliveries / subscriptions.length);
    for (let from = 1; from <= events; from += EVENTS_PER_CHUNK) {
      const to = Math.min(events, from + EVENTS_PER_CHUNK - 1);
      await client.query(
        `WITH e AS (
           INSERT INTO webhooks.events (id, event, owner_client_id, entity, entity_id, occurred_at, body, received_at)
           SELECT 'preload-' || g, $1, $2, 'order', g, t, ${BODY}, t
             FROM generate_series($3::int, $4::int) g, LATERAL (SELECT now() - (g::float8 / $7) * $5 * interval '1 day' - interval '1 hour' AS t) ts
           RETURNING id, received_at
         ), d AS (
           INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count, created_at, updated_at)
           SELECT s, e.id, 'msg_' || replace(gen_random_uuid()::text, '-', ''), 'succeeded', 1, e.received_at, e.received_at
             FROM e, unnest($6::int[]) s
           RETURNING id, created_at
         )
         INSERT INTO webhooks.attempts (delivery_id, attempted_at, status_code, duration_ms)
         SELECT id, created_at, 200, 3 FROM d`,
        [event, subscriptions[0].client_id, from, to, HISTORY_DAYS, subscriptions.map((s) => s.id), events],
      );
      log(`preload: ${to * subscriptions.length} of ${events * subscriptions.length} deliveries`);
    }
    await client.query("VACUUM ANALYZE webhooks.events, webhooks.deliveries, webhooks.attempts");
    return events * subscriptions.length;
  } finally {
    await client.end();
  }
}
