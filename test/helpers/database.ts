/**
 * A database of its own for each test file, so runs never collide:
 * - TEST_DATABASE_URL set (CI): a fresh database `oi_test_<run>_<random>` on that server, dropped after;
 * - else a PostgreSQL started by testcontainers (TEST_POSTGRES_IMAGE), where a container runtime answers;
 * - else the embedded PGlite: a data folder of its own, copied from the run's initialised one
 *   (test/helpers/pglite-folders.ts; said once in the output).
 */
import { randomBytes } from "node:crypto";
import knexFactory from "knex";
import { startPostgres } from "../containers/servers";
import { copyPgliteTemplate, removePgliteFolder } from "./pglite-folders";
import { databasePrefix } from "./test-run";

export interface TestDatabase {
  url: string;
  kind: "postgres" | "testcontainers" | "pglite";
  drop(): Promise<void>;
}

async function createOn(serverUrl: string): Promise<TestDatabase> {
  const name = `${databasePrefix()}${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
  const admin = knexFactory({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
  try {
    await admin.raw(`CREATE DATABASE ${name}`);
  } finally {
    await admin.destroy();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: "postgres",
    async drop() {
      const again = knexFactory({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
      try {
        await again.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.destroy();
      }
    },
  };
}

/** Set by the global setup when no container runtime answered: the test files need not ask again. */
const NO_CONTAINER_RUNTIME_VARIABLE = "OI_TEST_NO_CONTAINER_RUNTIME";

async function containerRuntimeAnswers(): Promise<boolean> {
  if (process.env[NO_CONTAINER_RUNTIME_VARIABLE]) return false;
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * For the global setup, without TEST_DATABASE_URL: says whether the test databases will be
 * PostgreSQL containers; when not, remembers it for the workers. Asked once per test file
 * instead, loading testcontainers cost a third of a second of CPU each time.
 */
export async function testcontainersWillServe(): Promise<boolean> {
  const answers = await containerRuntimeAnswers();
  if (!answers) process.env[NO_CONTAINER_RUNTIME_VARIABLE] = "1";
  return answers;
}

function pgliteDatabase(): TestDatabase {
  const folder = copyPgliteTemplate();
  if (!folder) return { url: "pglite://memory", kind: "pglite", drop: async () => undefined };
  return { url: `pglite://${folder}`, kind: "pglite", drop: async () => removePgliteFolder(folder) };
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (process.env.TEST_DATABASE_URL) return createOn(process.env.TEST_DATABASE_URL);
  if (await containerRuntimeAnswers()) return createOn((await startPostgres()).url);
  return pgliteDatabase();
}
