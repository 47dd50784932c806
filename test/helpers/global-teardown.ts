/**
 * After the whole run: removes the JetStream streams and databases this run created and did not
 * remove itself (a test that failed half-way, a process killed on purpose), and says what it
 * removed, so that `npm test` leaves the shared servers as it found them.
 */
import knexFactory from "knex";
import { deleteStreams } from "./jetstream";
import { databasePrefix, namespacePrefix, testRunId } from "./test-run";

async function dropDatabases(serverUrl: string, prefix: string): Promise<string[]> {
  const admin = knexFactory({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
  try {
    const rows = (await admin.raw("SELECT datname FROM pg_database WHERE starts_with(datname, ?)", [prefix])).rows as { datname: string }[];
    for (const { datname } of rows) await admin.raw(`DROP DATABASE IF EXISTS ?? WITH (FORCE)`, [datname]);
    return rows.map((r) => r.datname);
  } finally {
    await admin.destroy();
  }
}

export default async function globalTeardown(): Promise<void> {
  const run = testRunId();
  // Both projects (integration, e2e) register this teardown: the first one cleans up.
  if (process.env.OI_TEST_RUN_CLEANED === run) return;
  process.env.OI_TEST_RUN_CLEANED = run;
  const removed: string[] = [];
  if (process.env.TEST_NATS_URL) removed.push(...(await deleteStreams(process.env.TEST_NATS_URL, namespacePrefix(run))).map((s) => `stream ${s}`));
  if (process.env.TEST_DATABASE_URL) removed.push(...(await dropDatabases(process.env.TEST_DATABASE_URL, databasePrefix(run))).map((d) => `database ${d}`));
  console.log(`[tests] run ${run} cleaned up: ${removed.length === 0 ? "nothing was left behind" : `removed ${removed.length} left behind (${removed.slice(0, 8).join(", ")}${removed.length > 8 ? ", …" : ""})`}`);
}
