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

/** One row of PostgreSQL's statistics, read afresh on a connection of its own. */
async function statsRow<T>(serverUrl: string, sql: string, params: unknown[]): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    // The statistics collector's snapshot of this transaction would freeze the figures: ask afresh.
    await client.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await client.query(sql, params);
    return rows[0] as T;
  } finally {
    await client.end();
  }
}

async function read(serverUrl: string, database: string): Promise<DatabaseCounters> {
  const r = await statsRow<Record<string, string>>(serverUrl, COUNTERS, [database]);
  return {
    commits: Number(r.xact_commit),
    rollbacks: Number(r.xact_rollback),
    rowsInserted: Number(r.tup_inserted),
    rowsUpdated: Number(r.tup_updated),
    rowsFetched: Number(r.tup_fetched),
  };
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

/** What the server wrote and read for a soak's window: the cache, the WAL and the checkpoints. */
export interface ServerIo {
  /** Blocks of the run's database read from outside shared_buffers (the OS cache or the disk). */
  blocksRead: number;
  /** Of every block the run's database asked for, the share found in shared_buffers, %. */
  cacheHitPercent: number;
  /** WAL written by the whole server, MB, and the full-page images in it (a page's first change after a checkpoint). */
  walMB: number;
  walFullPageImages: number;
  checkpoints: number;
  /** Pages written by checkpoints, and by backends that found no clean buffer. */
  buffersCheckpoint: number;
  buffersBackend: number;
}

const SERVER_IO = `SELECT d.blks_read, d.blks_hit, w.wal_bytes, w.wal_fpi,
  b.checkpoints_timed + b.checkpoints_req AS checkpoints, b.buffers_checkpoint, b.buffers_backend
  FROM pg_stat_database d, pg_stat_wal w, pg_stat_bgwriter b WHERE d.datname = $1`;

type IoTotals = Record<
  "blks_read" | "blks_hit" | "wal_bytes" | "wal_fpi" | "checkpoints" | "buffers_checkpoint" | "buffers_backend",
  number
>;

async function readIo(serverUrl: string, database: string): Promise<IoTotals> {
  const row = await statsRow<Record<keyof IoTotals, string>>(serverUrl, SERVER_IO, [database]);
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as IoTotals;
}

/** The server's I/O counters read at each window's end; each figure is the window's increase. */
export class ServerIoWindows {
  private previous: IoTotals | null = null;

  constructor(
    private readonly serverUrl: string,
    private readonly database: string,
  ) {}

  /** The figures since the last call (null for the first, which only sets the start). */
  async take(): Promise<ServerIo | null> {
    const now = await readIo(this.serverUrl, this.database);
    const before = this.previous;
    this.previous = now;
    if (!before) return null;
    const d = (k: keyof IoTotals) => now[k] - before[k];
    const asked = d("blks_read") + d("blks_hit");
    return {
      blocksRead: d("blks_read"),
      cacheHitPercent: asked > 0 ? Math.round((d("blks_hit") / asked) * 1000) / 10 : 100,
      walMB: Math.round(d("wal_bytes") / 104857.6) / 10,
      walFullPageImages: d("wal_fpi"),
      checkpoints: d("checkpoints"),
      buffersCheckpoint: d("buffers_checkpoint"),
      buffersBackend: d("buffers_backend"),
    };
  }
}
