/**
 * `npm run db:migrate` (and the Kubernetes Job, and Compose's `migrate` container): applies
 * every service's pending migrations to DATABASE_URL, then exits 0. Upgrades run this first,
 * then roll the Deployments (which start with MIGRATE_ON_START=false).
 */
import { config, ConfigError } from "../shared/config/config";
import { closeDatabase, openDatabase } from "../shared/database/db";
import { useProcessKeys } from "../shared/security/secrets-keyring";
import { describeDatabaseUrl } from "./database-setup";
import { errorText } from "./error-text";
import { migrateAll } from "./migrations";

async function main(): Promise<void> {
  const cfg = config();
  useProcessKeys(cfg);
  console.log(`Migrating ${describeDatabaseUrl(cfg.databaseUrl)}`);
  const db = openDatabase(cfg.databaseUrl, 1);
  try {
    await migrateAll(db, (line) => console.log(`  ${line}`));
  } finally {
    await closeDatabase();
  }
  console.log("Migrations are current.");
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof ConfigError ? err.message : `Migration failed: ${errorText(err)}`);
    process.exit(1);
  },
);
