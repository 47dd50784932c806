/**
 * Issue 21's figures: how fast a delivery search answers on a subscription with a million
 * deliveries next to one with ten, and what the attempts' answers (headers, body) and the search
 * indexes cost per million deliveries.
 *
 * On a database of its own (TEST_DATABASE_URL or DATABASE_URL, else the local PostgreSQL): runs
 * every migration, gives one client a "big" subscription with N deliveries (default 1,000,000;
 * 99 % succeeded, 0.5 % failed, 0.5 % cancelled, one in a thousand a test) and a "small" one with
 * ten, written with SQL as webhooks-preload.ts does, then VACUUM ANALYZE (what autovacuum does).
 * Each search runs through the service's own code (webhooks.delivery-search.ts, then the page's
 * attempts) RUNS times: median and slowest, and the plan's index. Then the attempts: 50,000 rows
 * without an answer, with a typical one (what a Node receiver sends back) and with the largest one
 * kept (20 headers in 2 KiB, 4 KiB of body), each measured with pg_total_relation_size and scaled
 * to a million. Also times the writing of the deliveries and a recovery's walk of 100,000 of them
 * (webhooks.recovery.ts). Prints markdown for bench/README.md and drops the database.
 *
 * Usage: npm run -s build && node dist/bench/subscriber-api.js [deliveries]
 */
import type { Knex } from "knex";
import { closeDatabase, openDatabase } from "../shared/database/db";
import { loadConfig } from "../shared/config/config";
import { migrateAll } from "../runtime/migrations";
import { attemptsOf } from "../services/webhooks/webhooks.attempts.repository";
import { recoverNextBatch, type RecoveryRow } from "../services/webhooks/webhooks.recoveries.repository";
import { searchDeliveries, type DeliverySearch } from "../services/webhooks/webhooks.delivery-search";
import { createFreshDatabase, serverVersion } from "./databases";

const DEFAULT_DELIVERIES = 1_000_000;
const CHUNK = 100_000;
const RUNS = 30;
const ATTEMPT_ROWS = 50_000;
/** webhooks.recovery.ts's batch. */
const RECOVERY_BATCH = 500;
const RECOVERY_WINDOW = 100_000;
const MILLION = 1_000_000;

async function subscribe(db: Knex, clientId: number, path: string): Promise<{ id: number; event: string }> {
  const [row] = await db("webhooks.subscriptions")
    .insert({
      client_id: clientId,
      event: "sales_order_created",
      url: `https://example.com/${path}`,
      key: "k",
      secret: "s",
    })
    .returning<{ id: number; event: string }[]>(["id", "event"]);
  return row;
}

/** `count` deliveries of one subscription, one a minute back from now, with their events and one attempt each. */
async function writeDeliveries(db: Knex, subscriptionId: number, count: number, log: (l: string) => void) {
  for (let from = 1; from <= count; from += CHUNK) {
    const to = Math.min(count, from + CHUNK - 1);
    await db.raw(
      `WITH g AS (
         SELECT g, now() - (? - g) * interval '1 minute' AS t,
                CASE WHEN g % 1000 = 7 THEN 'webhook_test-' || gen_random_uuid() ELSE 'preload-' || ? || '-' || g END AS event_id,
                CASE WHEN g % 200 = 3 THEN 'failed' WHEN g % 200 = 5 THEN 'cancelled' ELSE 'succeeded' END AS status
           FROM generate_series(?::int, ?::int) g
       ), e AS (
         INSERT INTO webhooks.events (id, event, owner_client_id, entity, entity_id, occurred_at, body, received_at)
         SELECT event_id, CASE WHEN event_id LIKE 'webhook_test-%' THEN 'webhook_test' ELSE 'sales_order_created' END,
                1, 'order', g, t, '{"id":' || g || ',"status":"created"}', t FROM g
       ), d AS (
         INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count, created_at, updated_at)
         SELECT ?, event_id, 'msg_' || replace(gen_random_uuid()::text, '-', ''), status, 1, t, t FROM g
         RETURNING id, created_at
       )
       INSERT INTO webhooks.attempts (delivery_id, attempted_at, status_code, duration_ms)
       SELECT id, created_at, 200, 3 FROM d`,
      [count, subscriptionId, from, to, subscriptionId],
    );
    log(`  ${to.toLocaleString("en-US")} of ${count.toLocaleString("en-US")} deliveries`);
  }
}

/** Median and slowest milliseconds of `RUNS` runs (after one to warm up). */
async function timed(run: () => Promise<unknown>): Promise<{ median: number; max: number }> {
  await run();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], max: ms[ms.length - 1] };
}

/** The indexes the plan of a search's statement reads, from EXPLAIN of the statement the search runs. */
async function indexesRead(db: Knex, run: () => Promise<unknown>): Promise<string> {
  const seen: string[] = [];
  const onQuery = (q: { sql: string; bindings: unknown[] }) => {
    if (q.sql.includes("CROSS JOIN LATERAL")) seen.push(JSON.stringify(q));
  };
  db.on("query", onQuery);
  await run();
  db.off("query", onQuery);
  const statement = JSON.parse(seen[0]) as { sql: string; bindings: Knex.Value[] };
  const { rows } = await db.raw<{ rows: { "QUERY PLAN": string }[] }>(
    `EXPLAIN ${statement.sql.replace(/\$\d+/g, "?")}`,
    statement.bindings,
  );
  const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
  const indexes = [...plan.matchAll(/Index (?:Only )?Scan(?: Backward)? using (\w+)/g)].map((m) => m[1]);
  return [...new Set(indexes)].join(", ") || (plan.includes("Seq Scan") ? "**seq scan**" : "—");
}

interface Case {
  name: string;
  search: Omit<DeliverySearch, "order"> & { order?: "asc" | "desc" };
  /** Across both subscriptions (GET /webhooks/deliveries) rather than one. */
  across?: boolean;
}

async function searchFigures(
  db: Knex,
  big: { id: number; event: string },
  small: { id: number; event: string },
  deliveries: number,
) {
  const middle = (
    await db.raw<{ rows: { at: Date; id: number; webhook_id: string }[] }>(
      `SELECT created_at AS at, id, webhook_id FROM webhooks.deliveries WHERE subscription_id = ? ORDER BY id OFFSET ? LIMIT 1`,
      [big.id, 500],
    )
  ).rows[0];
  const deep = Buffer.from(`id:${middle.id}`).toString("base64url");
  const window = { since: new Date(middle.at.getTime() - 3_600_000), until: middle.at };
  const cases: Case[] = [
    { name: "oldest first, no filter", search: {} },
    { name: "newest first (the portal)", search: { order: "desc" } },
    { name: "newest first, `status=failed`", search: { order: "desc", status: "failed" } },
    { name: "newest first, `status=succeeded`", search: { order: "desc", status: "succeeded" } },
    { name: "one hour's window", search: { ...window } },
    { name: "newest first, `event=webhook_test`", search: { order: "desc", event: "webhook_test" } },
    { name: "`webhookId=`", search: { webhookId: middle.webhook_id } },
    { name: "newest first, from a cursor", search: { order: "desc", cursor: deep } },
    { name: "all subscriptions, newest first", search: { order: "desc" }, across: true },
  ];
  const lines = [
    `| search (limit 50, with the page's attempts) | 10 deliveries: median / slowest | ${deliveries.toLocaleString("en-US")} deliveries: median / slowest | index read |`,
    "|---|---:|---:|---|",
  ];
  const f = (t: { median: number; max: number }) => `${t.median.toFixed(1)} / ${t.max.toFixed(1)} ms`;
  for (const c of cases) {
    const runOn = (sub: { id: number; event: string }) => async () => {
      const scope = c.across ? [sub, sub === big ? small : big] : [sub];
      const { rows } = await searchDeliveries(db, scope, { order: "asc", limit: 50, ...c.search });
      await attemptsOf(
        db,
        rows.map((r) => r.id),
      );
    };
    // A cursor and a webhook-id name a delivery of the big subscription: on the small one they find nothing.
    const onSmall = c.search.cursor || c.search.webhookId ? null : await timed(runOn(small));
    const onBig = await timed(runOn(big));
    lines.push(`| ${c.name} | ${onSmall ? f(onSmall) : "—"} | ${f(onBig)} | ${await indexesRead(db, runOn(big))} |`);
  }
  return lines.join("\n");
}

/**
 * A recovery of the big subscription's newest `window` deliveries, walked as the recoverer does
 * (batches of RECOVERY_BATCH): queues again the ones that did not succeed. Timed once, and it
 * changes them back to pending: run after the searches.
 */
async function recoveryFigure(db: Knex, big: { id: number }, window: number): Promise<string> {
  const { rows } = await db.raw<{ rows: { since: Date }[] }>(
    `SELECT min(created_at) AS since FROM (SELECT created_at FROM webhooks.deliveries WHERE subscription_id = ?
       ORDER BY created_at DESC LIMIT ?) w`,
    [big.id, window],
  );
  const [claim] = (await db("webhooks.recoveries")
    .insert({
      subscription_id: big.id,
      since: rows[0].since,
      until: db.fn.now(),
      all_deliveries: false,
      status: "running",
      claim_token: "00000000-0000-4000-8000-000000000000",
      claimed_until: db.raw("now() + interval '1 hour'"),
    })
    .returning("*")) as RecoveryRow[];
  const started = performance.now();
  let batches = 0;
  let queued = 0;
  for (;;) {
    const step = await recoverNextBatch(db, claim, RECOVERY_BATCH, 60_000);
    if (!step) throw new Error("the bench's recovery lost its claim");
    batches += 1;
    queued += step.queued;
    if (step.done) break;
  }
  const ms = performance.now() - started;
  return (
    `The recovery's walk of the newest ${window.toLocaleString("en-US")} deliveries: ${batches} batches of ` +
    `${RECOVERY_BATCH}, ${queued.toLocaleString("en-US")} queued again, ${ms.toFixed(0)} ms ` +
    `(${(ms / batches).toFixed(1)} ms a batch).`
  );
}

/** What a Node receiver answers, less the hop-by-hop headers that are not kept. */
const TYPICAL_HEADERS = {
  "content-type": "text/plain",
  date: "Fri, 27 Nov 2026 02:00:00 GMT",
  "content-length": "2",
};

/** `n` characters of random hex, different on every row: what compression cannot shrink much. */
const randomText = (n: number) =>
  `(SELECT substr(string_agg(md5(random()::text || i || g), ''), 1, ${n}) FROM generate_series(1, ${Math.ceil(n / 32)}) i)`;

/** SQL of each answer kept, per row `g`: none, typical ones, and the largest the bounds allow. */
const ANSWERS = {
  none: { headers: "NULL", body: "NULL" },
  typical: { headers: `'${JSON.stringify(TYPICAL_HEADERS)}'::jsonb`, body: "'ok'" },
  json: { headers: `'${JSON.stringify(TYPICAL_HEADERS)}'::jsonb`, body: `'{"received":true,"id":"' || g || '"}'` },
  // 20 headers of 88 random characters and 12-character names: 2,000 of the 2,048 bytes kept.
  largest: {
    headers: `(SELECT jsonb_object_agg('x-header-' || lpad(h::text, 2, '0'), ${randomText(88)}) FROM generate_series(1, 20) h)`,
    body: randomText(4096),
  },
} as const;

/** Bytes per attempt (table, TOAST and indexes) for ATTEMPT_ROWS attempts answered as `answer` says. */
async function attemptBytes(db: Knex, deliveryId: number, answer: keyof typeof ANSWERS) {
  await db.raw(`TRUNCATE webhooks.attempts`);
  const { headers, body } = ANSWERS[answer];
  await db.raw(
    `INSERT INTO webhooks.attempts (delivery_id, attempted_at, status_code, duration_ms, response_headers, response_body)
     SELECT ?, now(), 200, 3, ${headers}, ${body} FROM generate_series(1, ?) g`,
    [deliveryId, ATTEMPT_ROWS],
  );
  await db.raw(`VACUUM ANALYZE webhooks.attempts`);
  const { rows } = await db.raw<{ rows: { bytes: string }[] }>(
    `SELECT pg_total_relation_size('webhooks.attempts') AS bytes`,
  );
  return Number(rows[0].bytes) / ATTEMPT_ROWS;
}

async function sizeFigures(db: Knex, deliveryId: number, deliveries: number) {
  const mb = (perRow: number) => `${((perRow * MILLION) / 1e6).toFixed(0)} MB`;
  const none = await attemptBytes(db, deliveryId, "none");
  const typical = await attemptBytes(db, deliveryId, "typical");
  const json = await attemptBytes(db, deliveryId, "json");
  const largest = await attemptBytes(db, deliveryId, "largest");
  const { rows: indexes } = await db.raw<{ rows: { name: string; bytes: string }[] }>(
    `SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = 'webhooks.deliveries'::regclass ORDER BY c.relname`,
  );
  const scale = MILLION / deliveries;
  return [
    "| one attempt per delivery | bytes per attempt | per million deliveries |",
    "|---|---:|---:|",
    `| no answer kept (before issue 21) | ${none.toFixed(0)} B | ${mb(none)} |`,
    `| typical answer: 3 headers kept (content-type, date, content-length), body \`ok\` | ${typical.toFixed(0)} B | ${mb(typical)} |`,
    `| typical headers, a small JSON body | ${json.toFixed(0)} B | ${mb(json)} |`,
    `| the largest kept: 20 headers in 2 KiB, 4 KiB of body (random text) | ${largest.toFixed(0)} B | ${mb(largest)} |`,
    "",
    "| index on `webhooks.deliveries` | per million deliveries |",
    "|---|---:|",
    ...indexes.map((i) => `| \`${i.name}\` | ${((Number(i.bytes) * scale) / 1e6).toFixed(0)} MB |`),
  ].join("\n");
}

async function main(): Promise<void> {
  const deliveries = Number(process.argv[2] ?? DEFAULT_DELIVERIES);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const cfg = loadConfig();
  const serverUrl =
    process.env.TEST_DATABASE_URL ??
    (cfg.databaseUrl.startsWith("postgres") ? cfg.databaseUrl : "postgres://postgres@127.0.0.1:5432/postgres");
  const database = await createFreshDatabase(serverUrl, `oi_bench_subscriber_api_${Date.now()}`);
  const db = openDatabase(database.url);
  try {
    await migrateAll(db);
    const big = await subscribe(db, 1, "big");
    const small = await subscribe(db, 1, "small");
    log(`writing ${deliveries.toLocaleString("en-US")} deliveries...`);
    const writing = performance.now();
    await writeDeliveries(db, big.id, deliveries, log);
    const writtenIn = performance.now() - writing;
    await writeDeliveries(db, small.id, 10, log);
    await db.raw("VACUUM ANALYZE webhooks.events, webhooks.deliveries, webhooks.attempts");
    const searches = await searchFigures(db, big, small, deliveries);
    const recovery = await recoveryFigure(db, big, Math.min(RECOVERY_WINDOW, deliveries));
    const sizes = await sizeFigures(
      db,
      (await db("webhooks.deliveries").first<{ id: number }>("id")).id,
      deliveries + 10,
    );
    console.log(
      `${await serverVersion(serverUrl)}, ${deliveries.toLocaleString("en-US")} deliveries, written with their ` +
        `events and attempts in ${(writtenIn / 1000).toFixed(1)} s (${((writtenIn * 1000) / deliveries).toFixed(1)} µs ` +
        `a delivery)\n\n${searches}\n\n${recovery}\n\n${sizes}`,
    );
  } finally {
    await closeDatabase(database.url);
    await database.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
