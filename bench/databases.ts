/**
 * Fresh PostgreSQL databases for the targets that need one, named after the run, and dropped
 * when the target is done (WITH (FORCE): a process that did not close its pool cannot keep it).
 */
import pg from "pg";
import { ensurePostgresDatabase } from "../runtime/database-setup";

export interface FreshDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function onServer(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function createFreshDatabase(serverUrl: string, name: string): Promise<FreshDatabase> {
  if (!/^[a-z0-9_]{1,63}$/.test(name)) throw new Error(`not a database name the benchmark makes: ${name}`);
  const url = onServer(serverUrl, name);
  if (!(await ensurePostgresDatabase(url)))
    throw new Error(`database ${name} already exists: the benchmark only uses databases it created`);
  return {
    name,
    url,
    drop: () => dropDatabase(serverUrl, name),
  };
}

/** Drops a database the benchmark made, even with connections left open (an interrupted run). */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: onServer(serverUrl, "postgres") });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * VACUUM ANALYZE of a whole database, as autovacuum would have done by then: for a phase that
 * comes after much writing (a long warm-up) on a server whose autovacuum may be off (CI's is).
 */
export async function vacuumAnalyze(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: onServer(serverUrl, name) });
  await client.connect();
  try {
    await client.query("VACUUM ANALYZE");
  } finally {
    await client.end();
  }
}

/** `PostgreSQL 15.x` as the server reports it, for the results' machine section. */
export async function serverVersion(serverUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>("SHOW server_version");
    return `PostgreSQL ${rows[0].server_version}`;
  } finally {
    await client.end();
  }
}
