/**
 * What the database did for the measured window, from PostgreSQL's own counters for the
 * target's database (pg_stat_database): transactions committed and rows written and read.
 * Divided by the requests, it shows work beyond the order itself (the outbox relay marking
 * rows sent, the webhooks consumer, pollers).
 */
import pg from "pg";

export interface DatabaseCounters {
  commits: number;
  rollbacks: number;
  rowsInserted: number;
  rowsUpdated: number;
  rowsFetched: number;
}

const COUNTERS =
  "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_fetched FROM pg_stat_database WHERE datname = $1";

async function read(serverUrl: string, database: string): Promise<DatabaseCounters> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    // The statistics collector's snapshot of this transaction would freeze the figures: ask afresh.
    await client.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await client.query<Record<string, string>>(COUNTERS, [database]);
    const r = rows[0];
    return {
      commits: Number(r.xact_commit),
      rollbacks: Number(r.xact_rollback),
      rowsInserted: Number(r.tup_inserted),
      rowsUpdated: Number(r.tup_updated),
      rowsFetched: Number(r.tup_fetched),
    };
  } finally {
    await client.end();
  }
}

export class DatabaseWindow {
  private constructor(
    private readonly serverUrl: string,
    private readonly database: string,
    private readonly before: DatabaseCounters,
  ) {}

  static async start(serverUrl: string, database: string): Promise<DatabaseWindow> {
    return new DatabaseWindow(serverUrl, database, await read(serverUrl, database));
  }

  /** The counters' growth since `start`, per request. */
  async perRequest(requests: number): Promise<DatabaseCounters> {
    const after = await read(this.serverUrl, this.database);
    const per = (k: keyof DatabaseCounters) =>
      Math.round(((after[k] - this.before[k]) / Math.max(1, requests)) * 100) / 100;
    return {
      commits: per("commits"),
      rollbacks: per("rollbacks"),
      rowsInserted: per("rowsInserted"),
      rowsUpdated: per("rowsUpdated"),
      rowsFetched: per("rowsFetched"),
    };
  }
}
