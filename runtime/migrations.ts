/**
 * Every service's migrations, by the schema it owns, for the processes that migrate the whole
 * database at once (`npm run db:migrate`, the Kubernetes Job, `npm run start:cluster`).
 * Only the migration lists are imported, never the services: migrating starts no broker.
 */
import type { Knex } from "knex";
import { migrateUp, type Migration } from "../shared/database/db";
import { errorText } from "./error-text";
import { migrations as clients } from "../services/clients/migrations";
import { migrations as crm } from "../services/crm/migrations";
import { migrations as catalogue } from "../services/catalogue/migrations";
import { migrations as references } from "../services/references/migrations";
import { migrations as orders } from "../services/orders/migrations";
import { migrations as webhooks } from "../services/webhooks/migrations";

/** Schema name → its migrations, in the order they are applied. Schemas are service names. */
export const SCHEMA_MIGRATIONS: ReadonlyArray<readonly [schema: string, migrations: Migration[]]> = [
  ["clients", clients],
  ["crm", crm],
  ["catalogue", catalogue],
  ["references", references],
  ["orders", orders],
  ["webhooks", webhooks],
];

export class SchemaMigrationError extends Error {
  constructor(
    public readonly schema: string,
    cause: unknown,
  ) {
    super(`Migrating schema "${schema}" failed: ${errorText(cause)}`, { cause });
    this.name = "SchemaMigrationError";
  }
}

/**
 * Applies every schema's pending migrations, one schema after the other (knex locks each
 * schema's migrations, so concurrent runs wait instead of colliding). Reports each schema.
 */
export async function migrateAll(db: Knex, report: (line: string) => void = () => undefined): Promise<void> {
  for (const [schema, migrations] of SCHEMA_MIGRATIONS) {
    try {
      await migrateUp(db, schema, migrations);
    } catch (err) {
      throw new SchemaMigrationError(schema, err);
    }
    report(`${schema}: ${migrations.length} migration(s) current`);
  }
}
