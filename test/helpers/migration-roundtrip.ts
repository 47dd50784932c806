/**
 * Runs one service's migrations up, down and up again on a database of its own, and reports
 * the tables of the service's schema after each step.
 */
import { closeDatabase, migrateDown, migrateUp, openDatabase, type Migration } from "../../shared/database/db";
import { createTestDatabase } from "./database";

export interface RoundTrip {
  afterUp: string[];
  afterDown: string[];
  afterUpAgain: string[];
}

/** knex keeps its own bookkeeping tables in the schema; they are not the service's tables. */
const KNEX_TABLES = new Set(["knex_migrations", "knex_migrations_lock"]);

/** On a database of its own (on the PGlite fallback, a data folder of its own). */
export async function migrationRoundTrip(schema: string, migrations: Migration[]): Promise<RoundTrip> {
  const database = await createTestDatabase();
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
