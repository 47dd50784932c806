/**
 * Gives a service its database handle and applies its own migrations in its own schema at
 * start (when MIGRATE_ON_START is on). The handle is shared per process (see shared/db.ts), so
 * the runner closes it once every service has stopped.
 */
import type { Knex } from "knex";
import type { ServiceSchema, ServiceSettingSchema } from "moleculer";
import { config } from "./config";
import { migrateUp, migrationsCurrent, openDatabase, type Migration } from "./db";

export interface DatabaseService {
  db: Knex;
  /** True when this service's migrations are all applied (readiness). */
  migrationsCurrent(): Promise<boolean>;
}

/** The schema type of a service that uses databaseMixin: `this.db` is typed in its handlers. */
export type DbServiceSchema<Methods = Record<string, never>> = ServiceSchema<ServiceSettingSchema, Methods & { migrationsCurrent(): Promise<boolean> }, { db: Knex }>;

export function databaseMixin(schema: string, migrations: Migration[]): Partial<ServiceSchema> {
  return {
    created() {
      const cfg = config();
      this.db = openDatabase(cfg.databaseUrl, cfg.databasePoolMax);
    },
    async started() {
      if (config().migrateOnStart) await migrateUp(this.db, schema, migrations);
    },
    methods: {
      migrationsCurrent() {
        return migrationsCurrent(this.db, schema, migrations);
      },
    },
  };
}
