/**
 * Database factory: one knex per database URL per process.
 *
 * - `postgres://...`  → pg pool (DATABASE_POOL_MAX connections).
 * - `pglite://memory` → PGlite in memory (throwaway).
 * - `pglite://<path>` → PGlite in a data folder, kept across restarts.
 *
 * PGlite has one connection, so every service of an embedded process must share one knex:
 * that is why instances are cached by URL. Each service still owns its own schema and
 * migrations; the shared handle is only the connection.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import knexFactory, { type Knex } from "knex";
import pg from "pg";
import { holdDataFolder } from "./data-folder-lock";
import { PGlite } from "@electric-sql/pglite";
import ClientPgLite from "knex-pglite";

/** Anything a repository function can run a query on. */
export type Db = Knex | Knex.Transaction;

const INT8 = 20;
const NUMERIC = 1700;
// Ids, counts and quantities stay far inside Number's exact range; both drivers agree on numbers.
const parseInt8 = (v: string) => Number.parseInt(v, 10);
const parseNumeric = (v: string) => Number.parseFloat(v);
pg.types.setTypeParser(INT8, parseInt8);
pg.types.setTypeParser(NUMERIC, parseNumeric);

const instances = new Map<string, Knex>();

export function isPglite(url: string): boolean {
  return url.startsWith("pglite://");
}

function pgliteDataDir(url: string): string | undefined {
  const location = url.slice("pglite://".length);
  if (location === "" || location === "memory") return undefined;
  const dir = path.resolve(location);
  fs.mkdirSync(dir, { recursive: true });
  holdDataFolder(dir);
  return dir;
}

/**
 * PostgreSQL settings of the embedded database, added to PGlite's own start parameters
 * (docs/operations.md, "Embedded database memory"). PGlite's default `shared_buffers` is
 * 128 MB inside its WebAssembly memory, and every page touched stays resident; the data folder is
 * read through the OS page cache anyway, so a smaller buffer pool costs little. One connection:
 * `work_mem` applies to one query at a time.
 */
export const PGLITE_SETTINGS = ["shared_buffers=16MB", "work_mem=4MB", "maintenance_work_mem=16MB"];

/**
 * A new data folder is initialised (initdb) in a short-lived child process. initdb's WebAssembly
 * instance touches ~800 MB, and the process that ran it keeps that peak and most of the resident
 * memory; the server then opens the initialised folder at ~150 MB. Synchronous like PGlite's own
 * initdb, which also holds the thread; only on the first start.
 */
export function initialiseDataFolder(dir: string): void {
  if (fs.existsSync(path.join(dir, "PG_VERSION"))) return;
  const init = `const { PGlite } = require(${JSON.stringify(require.resolve("@electric-sql/pglite"))});
    const db = new PGlite({ dataDir: process.argv[1] }); db.waitReady.then(() => db.close()).catch((err) => { console.error(err); process.exit(1); });`;
  execFileSync(process.execPath, ["-e", init, dir], { stdio: ["ignore", "ignore", "inherit"] });
}

function createKnex(url: string, poolMax: number): Knex {
  if (isPglite(url)) {
    const dataDir = pgliteDataDir(url);
    if (dataDir) initialiseDataFolder(dataDir);
    // One options object: `new PGlite(undefined, options)` (in memory) silently drops the options.
    const pglite = new PGlite({
      dataDir,
      parsers: { [INT8]: parseInt8, [NUMERIC]: parseNumeric },
      startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS.flatMap((setting) => ["-c", setting])],
    });
    return knexFactory({ client: ClientPgLite, dialect: "postgres", connection: { pglite } as never });
  }
  return knexFactory({
    client: "pg",
    connection: url,
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
    // knex prints each failed connect with its stack, then hands the caller the same error, which
    // is reported once and in one line (shared/database/database-errors.ts, runtime/start-failure.ts).
    log: { warn: (message: string) => void (message.startsWith("Acquire connection error") || console.warn(message)) },
  });
}

/** The shared knex for this URL (created on first use). */
export function openDatabase(url: string, poolMax = 10): Knex {
  let db = instances.get(url);
  if (!db) {
    db = createKnex(url, poolMax);
    instances.set(url, db);
  }
  return db;
}

/** Connection pool use of this process, summed over its shared handles (for /metrics). */
export interface PoolUsage {
  used: number;
  free: number;
  /** Callers waiting for a connection. */
  pending: number;
  max: number;
}

/** The part of tarn's pool (knex's `client.pool`) the pool metrics read. */
interface TarnPool {
  max: number;
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

export function poolUsage(): PoolUsage {
  const usage: PoolUsage = { used: 0, free: 0, pending: 0, max: 0 };
  for (const db of instances.values()) {
    const pool = (db.client as { pool?: TarnPool }).pool;
    if (!pool) continue;
    usage.used += pool.numUsed();
    usage.free += pool.numFree();
    usage.pending += pool.numPendingAcquires();
    usage.max += pool.max;
  }
  return usage;
}

/** Closes one shared handle (or all of them); services call it from `stopped`. */
export async function closeDatabase(url?: string): Promise<void> {
  const urls = url ? [url] : [...instances.keys()];
  for (const u of urls) {
    const db = instances.get(u);
    instances.delete(u);
    if (db) await db.destroy();
  }
}

/** A knex migration as each service declares it in `migrations/index.ts`. */
export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

function migrationSource(migrations: Migration[]): Knex.MigrationSource<Migration> {
  return {
    getMigrations: () => Promise.resolve(migrations),
    getMigrationName: (m) => m.name,
    getMigration: (m) => Promise.resolve(m),
  };
}

function migratorConfig(schema: string, migrations: Migration[]): Knex.MigratorConfig {
  return { schemaName: schema, tableName: "knex_migrations", migrationSource: migrationSource(migrations) };
}

/** Applies a service's migrations in its own schema (idempotent, locked by knex). */
export async function migrateUp(db: Knex, schema: string, migrations: Migration[]): Promise<void> {
  await db.raw("CREATE SCHEMA IF NOT EXISTS ??", [schema]);
  await db.migrate.latest(migratorConfig(schema, migrations));
}

/** Rolls back every migration of a service (used by tests of the migrations). */
export async function migrateDown(db: Knex, schema: string, migrations: Migration[]): Promise<void> {
  await db.migrate.rollback(migratorConfig(schema, migrations), true);
}

/** True when every migration of the service has been applied. */
export async function migrationsCurrent(db: Knex, schema: string, migrations: Migration[]): Promise<boolean> {
  const [, pending] = (await db.migrate.list(migratorConfig(schema, migrations))) as [unknown[], unknown[]];
  return pending.length === 0;
}

const UNIQUE_VIOLATION = "23505";

/** The name of the unique constraint a query broke, or null for any other error. */
export function uniqueViolation(err: unknown): string | null {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === UNIQUE_VIOLATION ? (e.constraint ?? "") : null;
}
