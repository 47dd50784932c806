/**
 * What a runner needs before it migrates: a printable name for the database (never its
 * password) and, for the local cluster, a database created when it does not exist yet.
 */
import pg from "pg";
import { isPglite } from "../shared/database/db";

const UNDEFINED_DATABASE = "3D000";

/** `postgres://host:5432/db` without user or password; PGlite URLs as they are. */
export function describeDatabaseUrl(url: string): string {
  if (isPglite(url)) return url;
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(unparsable DATABASE_URL)";
  }
}

async function canConnect(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  await client.end();
}

/**
 * Connects to a PostgreSQL database; when the server answers that it does not exist, creates it
 * from the server's `postgres` database. Returns true when it created it.
 */
export async function ensurePostgresDatabase(url: string): Promise<boolean> {
  try {
    await canConnect(url);
    return false;
  } catch (err) {
    if ((err as { code?: string }).code !== UNDEFINED_DATABASE) throw err;
  }
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const maintenance = new URL(url);
  maintenance.pathname = "/postgres";
  const client = new pg.Client({ connectionString: maintenance.toString(), connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  return true;
}
