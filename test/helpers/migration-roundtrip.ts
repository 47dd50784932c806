/**
 * Runs one service's migrations up, down and up again on a database of its own, and reports
 * the tables of the service's schema after each step.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { closeDatabase, migrateDown, migrateUp, openDatabase, type Migration } from "../../shared/database/db";
import { createTestDatabase, type TestDatabase } from "./database";

export interface RoundTrip {
  afterUp: string[];
  afterDown: string[];
  afterUpAgain: string[];
}

/** knex keeps its own bookkeeping tables in the schema; they are not the service's tables. */
const KNEX_TABLES = new Set(["knex_migrations", "knex_migrations_lock"]);

/** A database for this round trip only: on the PGlite fallback, a PGlite folder of its own. */
async function ownDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase();
  if (database.kind !== "pglite") return database;
  const folder = mkdtempSync(path.join(os.tmpdir(), "oi-migrations-"));
  return {
    url: `pglite://${folder}`,
    kind: "pglite",
    drop: async () => rmSync(folder, { recursive: true, force: true }),
  };
}

export async function migrationRoundTrip(schema: string, migrations: Migration[]): Promise<RoundTrip> {
  const database = await ownDatabase();
  const db = openDatabase(database.url, 1);
  const tables = async () => {
    const rows = await db("information_schema.tables")
      .where("table_schema", schema)
      .select<{ table_name: string }[]>("table_name");
    return rows
      .map((r) => r.table_name)
      .filter((n) => !KNEX_TABLES.has(n))
      .sort();
  };
  try {
    await migrateUp(db, schema, migrations);
    const afterUp = await tables();
    await migrateDown(db, schema, migrations);
    const afterDown = await tables();
    await migrateUp(db, schema, migrations);
    return { afterUp, afterDown, afterUpAgain: await tables() };
  } finally {
    await closeDatabase(database.url);
    await database.drop();
  }
}
