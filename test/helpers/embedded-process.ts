/**
 * The embedded mode (every service in one process, as `npm start` runs it) on a database of its
 * own, as one process of test/helpers/processes.ts; for end-to-end tests that need the API only.
 */
import { randomBytes } from "node:crypto";
import { ALL_SERVICES } from "../../shared/config/variables";
import { createTestDatabase } from "./database";
import { startServiceProcess } from "./processes";

export interface EmbeddedProcess {
  baseUrl: string;
  /** ADMIN_API_KEY of the process: an admin client's key. */
  adminKey: string;
  /** Everything the process printed so far. */
  output(): string;
  stop(): Promise<void>;
}

export async function startEmbedded(env: Record<string, string> = {}): Promise<EmbeddedProcess> {
  const database = await createTestDatabase();
  const adminKey = `admin-${randomBytes(18).toString("base64url")}`;
  try {
    const process = await startServiceProcess({
      name: "embedded",
      services: [...ALL_SERVICES],
      databaseUrl: database.url,
      env: { ADMIN_API_KEY: adminKey, ...env },
    });
    return {
      baseUrl: process.baseUrl,
      adminKey,
      output: () => process.output(),
      async stop() {
        await process.dispose();
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop();
    throw err;
  }
}
