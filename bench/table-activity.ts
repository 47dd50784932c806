/**
 * What PostgreSQL did to each table of one database, from its own counters
 * (pg_stat_user_tables, and pg_stat_database for the transactions): rows inserted, updated
 * (of which HOT), deleted and fetched, per table. Counts, not timings: they do not depend on
 * how loaded the machine is, so one run on a shared machine says as much as ten.
 *
 * PostgreSQL 15 keeps each backend's counts in the backend until it flushes them (at most once
 * a second after a transaction, within 10 s once idle, and when it exits); another session
 * cannot force that (pg_stat_force_next_flush() acts on the calling session only). So a reading
 * is exact only once the processes that did the work have exited, or stayed idle for longer
 * than that: the caller arranges it (see bench/delivery-writes.bench.ts).
 */
import pg from "pg";

/** The counters of one table, or their growth between two readings. */
export interface TableCounts {
  inserted: number;
  updated: number;
  hotUpdated: number;
  deleted: number;
  /** Rows read by sequential scans (seq_tup_read). */
  seqRead: number;
  /** Rows fetched through indexes (idx_tup_fetch). */
  idxFetched: number;
}

export interface ActivityReading {
  /** xact_commit of the database. */
  commits: number;
  rollbacks: number;
  /** By `schema.table`. */
  tables: Map<string, TableCounts>;
}

/** Longer than PostgreSQL 15's PGSTAT_IDLE_INTERVAL (10 s): an idle backend has flushed its counts by then. */
export const IDLE_FLUSH_MS = 11_000;

const TABLES = `SELECT schemaname || '.' || relname AS name, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
                       coalesce(seq_tup_read, 0) AS seq_tup_read, coalesce(idx_tup_fetch, 0) AS idx_tup_fetch
                  FROM pg_stat_user_tables`;
const DATABASE = "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()";

/** Reads the counters of the database `databaseUrl` names, afresh (not a snapshot cached in a session). */
export async function readActivity(databaseUrl: string): Promise<ActivityReading> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await client.query<Record<string, string>>(TABLES);
    const {
      rows: [db],
    } = await client.query<Record<string, string>>(DATABASE);
    const tables = new Map<string, TableCounts>(
      rows.map((r) => [
        r.name,
        {
          inserted: Number(r.n_tup_ins),
          updated: Number(r.n_tup_upd),
          hotUpdated: Number(r.n_tup_hot_upd),
          deleted: Number(r.n_tup_del),
          seqRead: Number(r.seq_tup_read),
          idxFetched: Number(r.idx_tup_fetch),
        },
      ]),
    );
    return { commits: Number(db.xact_commit), rollbacks: Number(db.xact_rollback), tables };
  } finally {
    await client.end();
  }
}

const COUNT_KEYS = ["inserted", "updated", "hotUpdated", "deleted", "seqRead", "idxFetched"] as const;
const ZERO: TableCounts = { inserted: 0, updated: 0, hotUpdated: 0, deleted: 0, seqRead: 0, idxFetched: 0 };

/** What grew between two readings (tables that did nothing left out). */
export function growth(before: ActivityReading, after: ActivityReading): ActivityReading {
  return combine([
    [after, 1],
    [before, -1],
  ]);
}

/**
 * Σ factor × reading, table by table: a growth per delivery (`[[g, 1 / deliveries]]`), or one
 * window's growth less another's share (`[[b, 1 / n], [a, -1 / m]]`). Tables left at 0 are dropped.
 */
export function combine(terms: readonly [ActivityReading, number][]): ActivityReading {
  const tables = new Map<string, TableCounts>();
  let commits = 0;
  let rollbacks = 0;
  for (const [reading, factor] of terms) {
    commits += factor * reading.commits;
    rollbacks += factor * reading.rollbacks;
    for (const [name, counts] of reading.tables) {
      const sum = tables.get(name) ?? { ...ZERO };
      for (const k of COUNT_KEYS) sum[k] += factor * counts[k];
      tables.set(name, sum);
    }
  }
  for (const [name, counts] of tables) if (COUNT_KEYS.every((k) => Math.abs(counts[k]) < 1e-9)) tables.delete(name);
  return { commits, rollbacks, tables };
}

/** A markdown table of a growth, one line per table (busiest first) and the transactions. */
export function activityTable(growth: ActivityReading, unit: string): string {
  const round = (n: number) => (Math.round(n * 1000) / 1000).toString();
  const lines = [
    `| per ${unit} | inserted | updated | of which HOT | deleted | seq. read | idx. fetched |`,
    `|---|---:|---:|---:|---:|---:|---:|`,
  ];
  const rows = [...growth.tables].sort(
    ([, a], [, b]) => b.inserted + b.updated + b.deleted - (a.inserted + a.updated + a.deleted),
  );
  const total = { ...ZERO };
  for (const [name, c] of rows) {
    for (const k of COUNT_KEYS) total[k] += c[k];
    lines.push(`| ${name} | ${COUNT_KEYS.map((k) => round(c[k])).join(" | ")} |`);
  }
  lines.push(`| **all tables** | ${COUNT_KEYS.map((k) => `**${round(total[k])}**`).join(" | ")} |`);
  lines.push(
    `| **transactions** (xact_commit) | **${round(growth.commits)}** | | | | | |`,
    ...(growth.rollbacks > 0 ? [`| rollbacks | ${round(growth.rollbacks)} | | | | | |`] : []),
  );
  return lines.join("\n");
}
