/**
 * After the whole run: removes the JetStream streams and databases this run created and did not
 * remove itself (a test that failed half-way, a process killed on purpose), and the embedded
 * fallback's PGlite folders (test/helpers/pglite-folders.ts), says what it
 * removed, then checks that none is left and fails the run, naming each, if one is: `npm test`
 * leaves the shared servers as it found them. Only names carrying this run's id count
 * (test/helpers/test-run.ts): other runs on the same servers, a colleague's or CI's, can neither
 * be touched by it nor make it fail. Jest turns a throw here into a failed run (exit code 1).
 */
import knexFactory, { type Knex } from "knex";
import { deleteStreams, streamNames } from "./jetstream";
import { pgliteFolders, removePgliteFolder, removePgliteTemplate } from "./pglite-folders";
import { databasePrefix, namespacePrefix, testRunId } from "./test-run";

/** One kind of thing a run creates on a shared server (or, for the embedded fallback, on this machine). */
interface Leftovers {
  kind: "stream" | "database" | "PGlite folder";
  /** Removes this run's; resolves to what it removed. */
  remove(): Promise<string[]>;
  /** This run's that are still there. */
  list(): Promise<string[]>;
}

async function withAdmin<T>(serverUrl: string, use: (admin: Knex) => Promise<T>): Promise<T> {
  const admin = knexFactory({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
  try {
    return await use(admin);
  } finally {
    await admin.destroy();
  }
}

async function databaseNames(admin: Knex, prefix: string): Promise<string[]> {
  const { rows } = await admin.raw<{ rows: { datname: string }[] }>(
    "SELECT datname FROM pg_database WHERE starts_with(datname, ?)",
    [prefix],
  );
  return rows.map((r) => r.datname);
}

function databases(serverUrl: string, prefix: string): Leftovers {
  return {
    kind: "database",
    // One failure does not stop the others; what stays is named by list() below.
    remove: () =>
      withAdmin(serverUrl, async (admin) => {
        const removed: string[] = [];
        for (const name of await databaseNames(admin, prefix)) {
          await admin.raw("DROP DATABASE IF EXISTS ?? WITH (FORCE)", [name]).then(
            () => removed.push(name),
            (err: Error) => console.error(`[tests] could not drop database ${name}: ${err.message}`),
          );
        }
        return removed;
      }),
    list: () => withAdmin(serverUrl, (admin) => databaseNames(admin, prefix)),
  };
}

function streams(natsUrl: string, prefix: string): Leftovers {
  return { kind: "stream", remove: () => deleteStreams(natsUrl, prefix), list: () => streamNames(natsUrl, prefix) };
}

function dataFolders(run: string): Leftovers {
  return {
    kind: "PGlite folder",
    remove: async () => {
      const folders = pgliteFolders(run);
      for (const folder of folders) removePgliteFolder(folder);
      return folders;
    },
    list: async () => pgliteFolders(run),
  };
}

function summary(items: string[]): string {
  return `${items.slice(0, 8).join(", ")}${items.length > 8 ? `, … (${items.length} in all)` : ""}`;
}

export default async function globalTeardown(): Promise<void> {
  const run = testRunId();
  removePgliteTemplate(run);
  const kinds: Leftovers[] = [
    dataFolders(run),
    ...(process.env.TEST_NATS_URL ? [streams(process.env.TEST_NATS_URL, namespacePrefix(run))] : []),
    ...(process.env.TEST_DATABASE_URL ? [databases(process.env.TEST_DATABASE_URL, databasePrefix(run))] : []),
  ];
  const removed: string[] = [];
  const left: string[] = [];
  for (const k of kinds) {
    await k.remove().then(
      (names) => removed.push(...names.map((n) => `${k.kind} ${n}`)),
      (err: Error) => console.error(`[tests] removing this run's ${k.kind}s failed: ${err.message}`),
    );
    left.push(...(await k.list()).map((n) => `${k.kind} ${n}`));
  }
  console.log(
    `[tests] run ${run} cleaned up: ${removed.length === 0 ? "nothing was left behind" : `removed ${removed.length} left behind (${summary(removed)})`}`,
  );
  if (left.length > 0) {
    throw new Error(
      `[tests] run ${run} leaves the shared servers changed: ${left.length} of its own could not be removed: ${summary(left)}. ` +
        "Remove them by hand, and find what holds them (the errors above say why each removal failed).",
    );
  }
}
