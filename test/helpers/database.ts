/**
 * A database of its own for each test file, so runs never collide:
 * - TEST_DATABASE_URL set (CI): a fresh database `oi_test_<run>_<random>` on that server, dropped after;
 * - else a PostgreSQL started by testcontainers (TEST_POSTGRES_IMAGE), where a container runtime answers;
 * - else the embedded PGlite in memory (said once in the output).
 */
import { randomBytes } from "node:crypto";
import knexFactory from "knex";
import { startPostgres } from "../containers/servers";
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

async function tryTestcontainers(): Promise<string | null> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
  } catch {
    return null;
  }
  return (await startPostgres()).url;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const server = process.env.TEST_DATABASE_URL || (await tryTestcontainers());
  if (server) return createOn(server);
  return { url: "pglite://memory", kind: "pglite", drop: async () => undefined };
}
