/**
 * Imports are pruned by retention (services/orders/orders.import-retention.ts): an import that
 * ended longer ago than ORDER_IMPORT_RETENTION goes with its lines and results; one that ended
 * recently, one still running, and an upload under way stay; an upload a crash cut off (still
 * `receiving`, its lease run out) goes.
 */
import type { Knex } from "knex";
import { migrateUp, openDatabase, closeDatabase } from "../../shared/database/db";
import { migrations } from "../../services/orders/migrations";
import { pruneImports } from "../../services/orders/orders.imports.repository";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

let database: TestDatabase;
let db: Knex;

beforeAll(async () => {
  database = await createTestDatabase();
  db = openDatabase(database.url);
  await migrateUp(db, "orders", migrations);
});
afterAll(async () => {
  await closeDatabase(database.url);
  await database.drop();
});

const DAY_MS = 86_400_000;

async function anImport(status: string, ago: { finishedMs?: number; leaseMs?: number }): Promise<number> {
  const [row] = await db
    .withSchema("orders")
    .table("order_imports")
    .insert({
      client_id: 1,
      principal: "{}",
      status,
      finished_at: ago.finishedMs === undefined ? null : new Date(Date.now() - ago.finishedMs),
      claimed_until: ago.leaseMs === undefined ? null : new Date(Date.now() - ago.leaseMs),
    })
    .returning<{ id: number }[]>("id");
  await db.withSchema("orders").table("order_import_lines").insert({ import_id: row.id, first_line: 0, lines: "{}" });
  await db.withSchema("orders").table("order_import_results").insert({ import_id: row.id, line: 0, status: 422 });
  return row.id;
}

it("when retention runs, then ended imports past it and cut-off uploads go with their lines and results, and the others stay", async () => {
  const old = await anImport("completed", { finishedMs: 8 * DAY_MS });
  const recent = await anImport("failed", { finishedMs: DAY_MS });
  const running = await anImport("running", { leaseMs: -60_000 });
  const cutOff = await anImport("receiving", { leaseMs: 60_000 });
  const uploading = await anImport("receiving", { leaseMs: -60_000 });

  expect(await pruneImports(db, 7 * DAY_MS, 1_000)).toBe(2);

  const left = (await db.withSchema("orders").table("order_imports").select<{ id: number }[]>("id")).map((r) => r.id);
  expect(left.sort()).toEqual([recent, running, uploading].sort());
  for (const table of ["order_import_lines", "order_import_results"]) {
    const ids = (await db.withSchema("orders").table(table).select<{ import_id: number }[]>("import_id")).map(
      (r) => r.import_id,
    );
    expect(ids).not.toContain(old);
    expect(ids).not.toContain(cutOff);
  }
});
