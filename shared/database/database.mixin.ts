/**
 * Gives a service its database handle and applies its own migrations in its own schema at
 * start (when MIGRATE_ON_START is on). The handle is shared per process (see shared/database/db.ts), so
 * the runner closes it once every service has stopped. Where the database is comes from the
 * service's settings (`this.settings.database`, shared/service-settings.ts).
 */
import type { Knex } from "knex";
import type { ServiceSchema, ServiceSettingSchema } from "moleculer";
import { migrateUp, migrationsCurrent, openDatabase, type Migration } from "./db";
import { databaseUnavailable, isDatabaseUnavailable } from "./database-errors";
import type { DatabaseServiceProbes } from "../observability/readiness";
import { outboxLagSeconds } from "../messaging/outbox";
import type { StorageSettings } from "../service-settings";

export interface DatabaseService {
  db: Knex;
  /** True when this service's migrations are all applied (readiness). */
  migrationsCurrent(): Promise<boolean>;
}

/**
 * The schema type of a service that uses databaseMixin: `this.db` is typed in its handlers
 * (and `Vars`, the other properties the service keeps on itself).
 */
export type DbServiceSchema<Methods = Record<string, never>, Vars = Record<string, never>> = ServiceSchema<
  ServiceSettingSchema,
  Methods & { migrationsCurrent(): Promise<boolean> } & DatabaseServiceProbes,
  { db: Knex } & Vars
>;

/** What the probes learnt once and need not ask the database again. */
interface ProbeMemo {
  /** Migrations only move forward in a running process: once current, they stay current. */
  migrationsCurrent: boolean;
  /** Whether the schema has an outbox table, known for good once its migrations are current. */
  hasOutbox: boolean | null;
}

/** While the database stays unreachable, its log line is repeated at most this often. */
const UNAVAILABLE_LOG_INTERVAL_MS = 60_000;

/** What the mixin keeps on the service beside its handle. */
interface DatabaseMixinVars {
  db: Knex;
  probeMemo: ProbeMemo;
  /** When "database unreachable" was last logged. */
  unavailableLoggedAt?: number;
}

// The settings stay moleculer's own type: a mixin must fit any service's schema (each reads its StorageSettings).
type DatabaseMixinSchema = ServiceSchema<
  ServiceSettingSchema,
  Pick<DatabaseService, "migrationsCurrent"> & DatabaseServiceProbes,
  DatabaseMixinVars
>;

export function databaseMixin(schema: string, migrations: Migration[]): Partial<ServiceSchema> {
  const mixin: Partial<DatabaseMixinSchema> = {
    hooks: {
      error: {
        // Every action of a database service: an unreachable database is a 503 to retry, not an unknown 500.
        "*"(this: { logger: { error(msg: string): void }; unavailableLoggedAt?: number }, _ctx: unknown, err: unknown) {
          if (!isDatabaseUnavailable(err)) throw err;
          const now = Date.now();
          if (now - (this.unavailableLoggedAt ?? 0) >= UNAVAILABLE_LOG_INTERVAL_MS) {
            this.unavailableLoggedAt = now;
            const { code = "", message = "" } = err as { code?: string; message?: string };
            this.logger.error(
              `database unreachable (${code} ${message}): answering 503 with Retry-After until it answers`,
            );
          }
          throw databaseUnavailable();
        },
      },
    },
    created() {
      const { url, poolMax } = (this.settings as StorageSettings).database;
      this.db = openDatabase(url, poolMax);
      this.probeMemo = { migrationsCurrent: false, hasOutbox: null } satisfies ProbeMemo;
    },
    async started() {
      if ((this.settings as StorageSettings).database.migrateOnStart) await migrateUp(this.db, schema, migrations);
    },
    methods: {
      migrationsCurrent() {
        return migrationsCurrent(this.db, schema, migrations);
      },
      /** This service's part of /readyz: its database answers and its migrations are applied. */
      async readinessChecks(): ReturnType<DatabaseServiceProbes["readinessChecks"]> {
        const memo = this.probeMemo;
        try {
          await this.db.raw("select 1");
        } catch {
          return { database: "unreachable", migrations: "unknown" };
        }
        // The database answered: failing to list the migrations means the schema was never migrated.
        memo.migrationsCurrent ||= await this.migrationsCurrent().catch(() => false);
        return { database: "ok", migrations: memo.migrationsCurrent ? "ok" : "pending" };
      },
      /** Outbox lag for /metrics; null when this schema keeps no outbox. */
      async outboxLag(): ReturnType<DatabaseServiceProbes["outboxLag"]> {
        const memo = this.probeMemo;
        const hasOutbox = memo.hasOutbox ?? (await this.db.schema.withSchema(schema).hasTable("outbox"));
        if (memo.migrationsCurrent) memo.hasOutbox = hasOutbox;
        return hasOutbox ? outboxLagSeconds(this.db, schema) : null;
      },
    },
  };
  // A mixin is typed as any service's schema, whose `this` moleculer cannot know: widened once, here.
  return mixin as unknown as Partial<ServiceSchema>;
}
