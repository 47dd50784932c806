/**
 * `npm run bench:order-lookups [-- --orders 1000000]`: how long each GET /api/v1/orders look-up
 * takes (services/orders/orders.lookups.repository.ts, the very query the action runs) on a
 * small table and on one of `--orders` orders, and how long the migration that indexes them
 * takes on the large one. Orders are written with SQL (the API would take hours for a million):
 * ten clients with a tenth each (the partner measured is one of them), created over a year, one
 * in fifty validated in the last hour.
 * Needs PostgreSQL (BENCH_DATABASE_URL or TEST_DATABASE_URL, else the local server); makes a
 * database of its own and drops it.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import knexFactory, { type Knex } from "knex";
import { migrateDown, migrateUp } from "../shared/database/db";
import { migrations } from "../services/orders/migrations";
import { lookUpOrders, type OrdersLookup } from "../services/orders/orders.lookups.repository";
import type { Visibility } from "../services/orders/orders.repository";

const PARTNER = 2;
const SMALL = 1_000;
const RUNS = 15;
const LOOKUPS_MIGRATION = "20261210000000_order_lookups";

const serverUrl =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const { values } = parseArgs({ options: { orders: { type: "string", default: "1000000" } } });
const total = Number(values.orders);

/** Orders `from..to` of the numbering above. */
async function insertOrders(db: Knex, from: number, to: number): Promise<void> {
  await db.raw(
    `INSERT INTO orders.orders (code, client_id, status, external_id, external_reference, contact, customer,
                                invoicing_address, delivery_address, created_at, updated_at, validated_at)
     SELECT 'ORD-B-' || g, g % 10 + 1,
            CASE WHEN g % 49 = 0 THEN 'validated' ELSE 'pending' END, 'SO-' || g, 'PO-' || (g % 100000),
            '{}', '{"id":1,"name":"Acme"}', '{}', '{}', at, CASE WHEN g % 49 = 0 THEN now() - (g % 3600) * interval '1 second' ELSE at END,
            CASE WHEN g % 49 = 0 THEN now() ELSE NULL END
       FROM generate_series(?::int, ?::int) g,
            LATERAL (SELECT now() - interval '365 days' + (g::float / ? * interval '365 days') AS at) t`,
    [from, to, total],
  );
}

function lookups(n: number): [string, OrdersLookup][] {
  // An order of the partner's (client_id = g % 10 + 1) from the middle of the table.
  const some = Math.floor(n / 20) * 10 + 1;
  const day = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const hour = new Date(Date.now() - 3_600_000).toISOString();
  return [
    ["externalId", { externalId: `SO-${some}` }],
    ["externalReference", { externalReference: `PO-${some % 100000}` }],
    ["code", { code: `ORD-B-${some}` }],
    ["createdSince (30 days ago), page 1", { createdSince: day }],
    ["createdSince … createdUntil, desc", { createdSince: day, createdUntil: new Date().toISOString(), order: "desc" }],
    ["updatedSince (1 hour ago), page 1", { updatedSince: hour }],
    ["updatedSince, status=validated, limit 500", { updatedSince: hour, status: "validated", limit: 500 }],
    ["no filter, order=desc", { order: "desc" }],
  ];
}

/** Median milliseconds of the look-up, after one warm-up run. */
async function timeLookup(db: Knex, v: Visibility, lookup: OrdersLookup): Promise<number> {
  await lookUpOrders(db, v, lookup);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = process.hrtime.bigint();
    const page = await lookUpOrders(db, v, lookup);
    // The second page too when there is one: the cursor's keyset must be as cheap as the first.
    if (page.nextCursor) await lookUpOrders(db, v, { ...lookup, cursor: page.nextCursor });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)];
}

async function measure(db: Knex, n: number): Promise<Map<string, [number, number]>> {
  const out = new Map<string, [number, number]>();
  for (const [name, lookup] of lookups(n))
    out.set(name, [
      await timeLookup(db, { all: false, clientId: PARTNER }, lookup),
      await timeLookup(db, { all: true }, lookup),
    ]);
  return out;
}

async function main(): Promise<void> {
  const name = `oi_bench_lookups_${randomBytes(3).toString("hex")}`;
  const admin = knexFactory({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = knexFactory({ client: "pg", connection: url.toString(), pool: { min: 1, max: 2 } });
  try {
    await migrateUp(db, "orders", migrations);
    await insertOrders(db, 1, SMALL);
    await db.raw("ANALYZE orders.orders");
    const small = await measure(db, SMALL);
    const before = migrations.filter((m) => m.name !== LOOKUPS_MIGRATION);
    await migrateDown(db, "orders", migrations);
    await migrateUp(db, "orders", before);
    for (let from = SMALL + 1; from <= total; from += 100_000)
      await insertOrders(db, from, Math.min(total, from + 99_999));
    await db.raw("ANALYZE orders.orders");
    const started = Date.now();
    await migrateUp(db, "orders", migrations);
    const indexSeconds = (Date.now() - started) / 1000;
    await db.raw("ANALYZE orders.orders");
    const large = await measure(db, total);
    console.log(
      `| look-up (page of 50 and the next page) | ${SMALL.toLocaleString("en")} orders: partner / back office | ${total.toLocaleString("en")} orders: partner / back office |`,
    );
    console.log("| --- | --- | --- |");
    for (const [lookup, [sp, sb]] of small) {
      const [lp, lb] = large.get(lookup)!;
      console.log(`| ${lookup} | ${sp.toFixed(1)} / ${sb.toFixed(1)} ms | ${lp.toFixed(1)} / ${lb.toFixed(1)} ms |`);
    }
    console.log(
      `\nmigration ${LOOKUPS_MIGRATION} on ${total.toLocaleString("en")} orders: ${indexSeconds.toFixed(1)} s`,
    );
  } finally {
    await db.destroy();
    await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
