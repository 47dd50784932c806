/**
 * `npm run bench:retention`: what retention saves on disk, in rows and bytes per million orders.
 *
 * On a database of its own (TEST_DATABASE_URL or DATABASE_URL, else the local PostgreSQL): runs
 * every migration, writes N validated orders with their outbox events and webhook deliveries
 * (bench/retention-orders-sql.ts, SQL mirroring what the services write), reads rows and
 * pg_total_relation_size (table, indexes and TOAST) of every table; then ages those rows past
 * WEBHOOK_RETENTION and OUTBOX_RETENTION, runs the pruning the services run (the webhooks
 * retention pass and each outbox's), VACUUMs as autovacuum would and reads the sizes again,
 * then VACUUM FULL (what it takes to hand the space back) and reads them once more; prints the
 * three scaled to one million orders, and drops the database.
 *
 * Usage: node dist/bench/retention-sizes.js [orders]   (default 20,000)
 */
import type { Knex } from "knex";
import { closeDatabase, openDatabase } from "../shared/database/db";
import { loadConfig } from "../shared/config/config";
import { pruneSentEvents } from "../shared/messaging/outbox";
import { pruneInBatches } from "../shared/database/periodic-job";
import { migrateAll } from "../runtime/migrations";
import { pruneWebhooks } from "../services/webhooks/webhooks.retention";
import { createFreshDatabase } from "./databases";
import { writeOrders } from "./retention-orders-sql";

const DEFAULT_ORDERS = 20_000;
const MILLION = 1_000_000;
const DAY_MS = 86_400_000;
const SCHEMAS = ["clients", "crm", "catalogue", "references", "orders", "webhooks"];

interface TableSize {
  table: string;
  rows: number;
  bytes: number;
}

async function tableSizes(db: Knex): Promise<TableSize[]> {
  const { rows: tables } = await db.raw<{ rows: { table: string; bytes: string }[] }>(
    `SELECT n.nspname || '.' || c.relname AS table, pg_total_relation_size(c.oid) AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = ANY(?) AND c.relname NOT LIKE 'knex_migrations%'
      ORDER BY 1`,
    [SCHEMAS],
  );
  const sizes: TableSize[] = [];
  for (const t of tables) {
    const [schema, name] = t.table.split(".");
    const { rows } = await db.raw<{ rows: { n: number }[] }>(`SELECT count(*)::int AS n FROM ??.??`, [schema, name]);
    sizes.push({ table: t.table, rows: rows[0].n, bytes: Number(t.bytes) });
  }
  return sizes;
}

/** Moves every retained row's clock back by `ms`, as if written that long ago. */
async function ageRows(db: Knex, ms: number): Promise<void> {
  const back = (column: string) => `${column} = ${column} - ?::bigint * interval '1 millisecond'`;
  for (const schema of await outboxSchemas(db)) {
    await db.raw(`UPDATE ??.outbox SET ${back("created_at")}, ${back("published_at")}`, [schema, ms, ms]);
  }
  await db.raw(`UPDATE webhooks.events SET ${back("occurred_at")}, ${back("received_at")}`, [ms, ms]);
  await db.raw(`UPDATE webhooks.deliveries SET ${back("created_at")}, ${back("updated_at")}`, [ms, ms]);
  await db.raw(`UPDATE webhooks.attempts SET ${back("attempted_at")}`, [ms]);
}

async function outboxSchemas(db: Knex): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { schema: string }[] }>(
    `SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'outbox' AND table_schema = ANY(?) ORDER BY 1`,
    [SCHEMAS],
  );
  return rows.map((r) => r.schema);
}

/** One pass of each retention job's work (webhooks.retention.ts, outbox-relay.mixin.ts), to the end. */
async function pruneOnce(db: Knex, webhookRetentionMs: number, outboxRetentionMs: number): Promise<string[]> {
  const report: string[] = [];
  const untilDone = () => true;
  const started = performance.now();
  const webhooks = await pruneWebhooks(db, webhookRetentionMs, untilDone);
  const ms = performance.now() - started;
  report.push(
    `webhooks: ${webhooks.deliveries} deliveries, ${webhooks.attempts} attempts, ${webhooks.events} events in ${ms.toFixed(0)} ms`,
  );
  for (const schema of await outboxSchemas(db)) {
    const pruned = await pruneInBatches((limit) => pruneSentEvents(db, schema, outboxRetentionMs, limit), untilDone);
    report.push(`${schema}.outbox: ${pruned} sent events`);
  }
  return report;
}

const formatBytes = (b: number) =>
  b >= 1e9
    ? `${(b / 1e9).toFixed(2)} GB`
    : b >= 1e6
      ? `${(b / 1e6).toFixed(1)} MB`
      : b >= 1e3
        ? `${(b / 1e3).toFixed(0)} kB`
        : `${b} B`;
const formatRows = (n: number) => Math.round(n).toLocaleString("en-US");

/** A markdown table, per table and in total, scaled from `orders` to one million orders. */
function sizeTable(orders: number, before: TableSize[], after: TableSize[], compacted: TableSize[]): string {
  const scale = MILLION / orders;
  const afterOf = new Map(after.map((t) => [t.table, t]));
  const compactedOf = new Map(compacted.map((t) => [t.table, t]));
  const lines = [
    "| table | rows before | bytes before | bytes per order | rows after | bytes after VACUUM | bytes after VACUUM FULL |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  const total = {
    table: "**all tables**",
    rowsBefore: 0,
    bytesBefore: 0,
    rowsAfter: 0,
    bytesAfter: 0,
    bytesCompacted: 0,
  };
  const row = (r: typeof total) =>
    `| ${r.table} | ${formatRows(r.rowsBefore * scale)} | ${formatBytes(r.bytesBefore * scale)} | ${formatRows(r.bytesBefore / orders)} B | ${formatRows(r.rowsAfter * scale)} | ${formatBytes(r.bytesAfter * scale)} | ${formatBytes(r.bytesCompacted * scale)} |`;
  for (const b of before) {
    const a = afterOf.get(b.table) ?? { rows: 0, bytes: 0 };
    const c = compactedOf.get(b.table) ?? { rows: 0, bytes: 0 };
    total.rowsBefore += b.rows;
    total.bytesBefore += b.bytes;
    total.rowsAfter += a.rows;
    total.bytesAfter += a.bytes;
    total.bytesCompacted += c.bytes;
    if (b.rows === 0 && a.rows === 0) continue;
    lines.push(
      row({
        table: b.table,
        rowsBefore: b.rows,
        bytesBefore: b.bytes,
        rowsAfter: a.rows,
        bytesAfter: a.bytes,
        bytesCompacted: c.bytes,
      }),
    );
  }
  lines.push(row(total));
  return lines.join("\n");
}

function ordersWanted(arg: string | undefined): number {
  if (arg === undefined) return DEFAULT_ORDERS;
  const n = Number(arg.replace(/[_,]/g, ""));
  if (!Number.isInteger(n) || n < 1) throw new Error(`orders must be a positive whole number, not "${arg}"`);
  return n;
}

async function main(): Promise<void> {
  const orders = ordersWanted(process.argv[2]);
  const cfg = loadConfig();
  const serverUrl =
    process.env.TEST_DATABASE_URL ??
    (cfg.databaseUrl.startsWith("postgres") ? cfg.databaseUrl : "postgres://postgres@127.0.0.1:5432/postgres");
  const database = await createFreshDatabase(serverUrl, `oi_bench_retention_${Date.now()}`);
  const db = openDatabase(database.url);
  try {
    await migrateAll(db);
    console.log(
      `Writing ${formatRows(orders)} validated orders with their events, deliveries and attempts (SQL mirroring the services) ...`,
    );
    await writeOrders(db, orders);
    await db.raw("VACUUM ANALYZE");
    const before = await tableSizes(db);

    const webhookRetentionMs = cfg.webhooks.retentionMs;
    const outboxRetentionMs = cfg.outboxRetentionMs;
    await ageRows(db, Math.max(webhookRetentionMs, outboxRetentionMs) + DAY_MS);
    const pruned = await pruneOnce(db, webhookRetentionMs, outboxRetentionMs);
    // What autovacuum does soon after (webhooks.deliveries is tuned to be vacuumed often): frees the pages.
    await db.raw("VACUUM ANALYZE");
    const after = await tableSizes(db);
    // Emptied pages stay in the files (new rows reuse them); only a rewrite hands them back.
    await db.raw("VACUUM FULL");
    const compacted = await tableSizes(db);

    console.log(
      `Pruned (WEBHOOK_RETENTION ${webhookRetentionMs / DAY_MS} d, OUTBOX_RETENTION ${outboxRetentionMs / DAY_MS} d): ${pruned.join("; ")}`,
    );
    console.log(
      `\nMeasured on ${formatRows(orders)} orders, SCALED to one million orders (x${MILLION / orders}); sizes are pg_total_relation_size (heap, indexes, TOAST):\n`,
    );
    console.log(sizeTable(orders, before, after, compacted));
  } finally {
    await closeDatabase(database.url);
    await database.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
