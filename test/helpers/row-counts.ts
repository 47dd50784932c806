/**
 * The row count of EVERY table of the services' schemas, read in one statement, so a test can
 * prove that a refused request wrote nothing anywhere — including tables added after the test
 * was written (they are found in information_schema, not listed here).
 *
 *   const rows = await RowCounts.open(databaseUrl);
 *   const before = await rows.snapshot();  ...  changedTables(before, await rows.snapshot());
 */
import knexFactory, { type Knex } from "knex";

export const SERVICE_SCHEMAS = ["clients", "crm", "catalogue", "references", "orders", "webhooks"];

export type Counts = Record<string, number>;

/** Anything that can count what is stored (the SQL one below; a test may count through the API instead). */
export interface RowCounter {
  describe: string;
  snapshot(): Promise<Counts>;
  close(): Promise<void>;
}

/** "orders.orders +1" for each table whose count moved. */
export function changedTables(before: Counts, after: Counts): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((t) => before[t] !== after[t])
    .map((t) => `${t} ${(after[t] ?? 0) - (before[t] ?? 0) > 0 ? "+" : ""}${(after[t] ?? 0) - (before[t] ?? 0)}`);
}

/**
 * Waits until the counts stop moving (two equal reads in a row), so that writes a previous
 * accepted request set off in the background (outbox relay, webhook fan-out and attempts)
 * are not blamed on the next request. Bounded: after `maxReads` it returns what it has.
 */
export async function settledCounts(counter: RowCounter, maxReads = 40, pauseMs = 150): Promise<Counts> {
  let previous = await counter.snapshot();
  for (let i = 0; i < maxReads; i++) {
    await new Promise((r) => setTimeout(r, pauseMs));
    const current = await counter.snapshot();
    if (changedTables(previous, current).length === 0) return current;
    previous = current;
  }
  return previous;
}

export class RowCounts implements RowCounter {
  private constructor(
    private readonly db: Knex,
    private readonly statement: string,
    readonly tables: string[],
  ) {}

  get describe(): string {
    return `row counts of ${this.tables.length} tables in ${SERVICE_SCHEMAS.join(", ")}`;
  }

  static async open(databaseUrl: string): Promise<RowCounts> {
    const db = knexFactory({ client: "pg", connection: databaseUrl, pool: { min: 0, max: 1 } });
    const found = await db("information_schema.tables")
      .select("table_schema", "table_name")
      .whereIn("table_schema", SERVICE_SCHEMAS)
      .andWhere("table_type", "BASE TABLE")
      // knex's own bookkeeping changes only when a migration runs.
      .andWhereNot("table_name", "like", "knex_migrations%")
      // The retention scheduler's own bookkeeping, written on its clock, never by a request.
      .andWhereNot("table_name", "job_runs")
      .orderBy(["table_schema", "table_name"]);
    const tables = found.map((t: { table_schema: string; table_name: string }) => `${t.table_schema}.${t.table_name}`);
    const missing = SERVICE_SCHEMAS.filter((s) => !tables.some((t) => t.startsWith(`${s}.`)));
    if (missing.length > 0) {
      await db.destroy();
      throw new Error(`no tables found in schema(s) ${missing.join(", ")}: are the migrations applied?`);
    }
    const quoted = (t: string) =>
      t
        .split(".")
        .map((p) => `"${p}"`)
        .join(".");
    const statement = tables.map((t) => `SELECT '${t}' AS t, count(*)::int AS n FROM ${quoted(t)}`).join(" UNION ALL ");
    return new RowCounts(db, statement, tables);
  }

  async snapshot(): Promise<Counts> {
    const { rows } = await this.db.raw<{ rows: { t: string; n: number }[] }>(this.statement);
    return Object.fromEntries(rows.map((r) => [r.t, r.n]));
  }

  close(): Promise<void> {
    return this.db.destroy();
  }
}
