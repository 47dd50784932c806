/**
 * `npm run start:cluster` as a user runs it: `node dist/runtime/cluster.js` in a folder of
 * their own, with NATS and PostgreSQL but no SECRETS_ENCRYPTION_KEYS. Only the webhooks process
 * (`SERVICES=webhooks`): it is the one that refuses to start without the keys. Runs the compiled
 * code: `npm test` builds first (pretest); alone, run `npm run build`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { EMBEDDED_KEY_FILE } from "../../shared/security/secrets-keyring";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { freePort, TEST_NAMESPACE, TEST_SECRETS_ENCRYPTION_KEYS } from "../helpers/processes";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";

const CLUSTER = path.resolve(__dirname, "../../dist/runtime/cluster.js");
const natsUrl = process.env.TEST_NATS_URL;

interface Started {
  output: () => string;
  ready: boolean;
}

/** The cluster's readiness on its webhooks process's health port, or why it exited first. */
async function readyOrExited(child: ChildProcess, healthPort: number): Promise<boolean> {
  let exited = false;
  child.once("exit", () => (exited = true));
  for (;;) {
    if (exited) return false;
    const ready = await fetch(`http://127.0.0.1:${healthPort}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

async function startCluster(cwd: string, databaseUrl: string, extraEnv: Record<string, string> = {}): Promise<Started> {
  const healthPort = await freePort();
  const child = spawn(process.execPath, [CLUSTER], {
    cwd,
    env: {
      PATH: process.env.PATH,
      SERVICES: "webhooks",
      HEALTH_PORT: String(healthPort),
      NAMESPACE: TEST_NAMESPACE,
      TRANSPORTER: natsUrl,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "warn",
      ...extraEnv,
    },
  });
  let text = "";
  child.stdout.on("data", (chunk) => (text += chunk));
  child.stderr.on("data", (chunk) => (text += chunk));
  const output = () => text;
  try {
    return { output, ready: await readyOrExited(child, healthPort) };
  } finally {
    await stopped(child);
  }
}

// start:cluster is the distributed mode: NATS, and PostgreSQL (PGlite cannot be shared between processes).
const cluster = requires(["nats", "postgres"]).describe;

cluster("npm run start:cluster without SECRETS_ENCRYPTION_KEYS", () => {
  let database: TestDatabase;
  const folders: string[] = [];
  const userFolder = () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), "oi-cluster-"));
    folders.push(folder);
    return folder;
  };

  beforeAll(async () => {
    if (!fs.existsSync(CLUSTER)) throw new Error("dist/ is missing: run `npm run build` first");
    database = await createTestDatabase();
    if (database.kind === "pglite") throw new Error("start:cluster needs PostgreSQL: set TEST_DATABASE_URL");
  });
  afterAll(async () => {
    await database?.drop();
    for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
    if (natsUrl) await deleteStreams(natsUrl, TEST_NAMESPACE);
  });

  it("when it starts twice in a user's folder, then the webhooks process is ready both times with one development key kept in ./.data, and each start says so and that production must set the variable", async () => {
    const folder = userFolder();
    const keyFile = path.join(folder, ".data/pglite", EMBEDDED_KEY_FILE);

    const first = await startCluster(folder, database.url);
    expect(first.ready).toBe(true);
    expect(first.output()).toMatch(
      /SECRETS_ENCRYPTION_KEYS is not set: generated .*production must set SECRETS_ENCRYPTION_KEYS/,
    );
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = fs.readFileSync(keyFile, "utf8");

    const second = await startCluster(folder, database.url);
    expect(second.ready).toBe(true);
    expect(second.output()).toMatch(
      /SECRETS_ENCRYPTION_KEYS is not set: .*encrypted with the key in .*production must set SECRETS_ENCRYPTION_KEYS/,
    );
    expect(fs.readFileSync(keyFile, "utf8")).toBe(key);
  }, 120_000);

  it("when SECRETS_ENCRYPTION_KEYS is set, then no key is generated and nothing is said about one", async () => {
    const folder = userFolder();
    const started = await startCluster(folder, database.url, { SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS });
    expect(started.ready).toBe(true);
    expect(started.output()).not.toContain("SECRETS_ENCRYPTION_KEYS is not set");
    expect(fs.existsSync(path.join(folder, ".data"))).toBe(false);
  }, 60_000);

  it("when TRANSPORTER lists servers of which only one answers (first and last listed down), then it starts", async () => {
    const down = [await freePort(), await freePort()].map((port) => `nats://127.0.0.1:${port}`);
    const started = await startCluster(userFolder(), database.url, {
      SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS,
      TRANSPORTER: [down[0], natsUrl!, down[1]].join(","),
    });
    expect({ ready: started.ready, output: started.ready ? "" : started.output() }).toEqual({
      ready: true,
      output: "",
    });
  }, 60_000);
});
