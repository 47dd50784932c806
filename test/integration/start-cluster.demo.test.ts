/**
 * `npm run start:cluster` offers the demo of `npm start`: on an empty database it prints both
 * keys and the curl lines, and the partner's printed curl line creates an order through the
 * cluster's gateway. Runs the compiled code: `npm test` builds first (pretest); alone, run
 * `npm run build`.
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { freePort, TEST_NAMESPACE, TEST_SECRETS_ENCRYPTION_KEYS } from "../helpers/processes";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";

const CLUSTER = path.resolve(__dirname, "../../dist/runtime/cluster.js");
const natsUrl = process.env.TEST_NATS_URL;
const BANNER_END = /^─{20,}$/m;

// start:cluster is the distributed mode: NATS, and PostgreSQL (PGlite cannot be shared between processes).
const cluster = requires(["nats", "postgres"]).describe;

/** The processes whose parent is `pid` (`pgrep -P`, on Linux and macOS; it exits 1 when there is none). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

cluster("npm run start:cluster on an empty database", () => {
  let database: TestDatabase;
  let folder: string;
  beforeAll(async () => {
    if (!fs.existsSync(CLUSTER)) throw new Error("dist/ is missing: run `npm run build` first");
    database = await createTestDatabase();
    if (database.kind === "pglite") throw new Error("start:cluster needs PostgreSQL: set TEST_DATABASE_URL");
    folder = fs.mkdtempSync(path.join(os.tmpdir(), "oi-cluster-demo-"));
  });
  afterAll(async () => {
    await database?.drop();
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
    await deleteStreams(natsUrl!, TEST_NAMESPACE);
  });

  it("when it has started, then it has printed the demo keys and curl lines, and the partner's line creates an order", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [CLUSTER], {
      cwd: folder,
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        HEALTH_PORT: "0",
        NAMESPACE: TEST_NAMESPACE,
        TRANSPORTER: natsUrl,
        DATABASE_URL: database.url,
        SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS,
        AUTH_FAILURES_PER_MINUTE: "0",
      },
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    try {
      await Promise.race([
        (async () => {
          while (!(
            output.includes("Partner app API key:") &&
            BANNER_END.test(output.slice(output.indexOf("Partner app API key:")))
          )) {
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        })(),
        exited.then(() => Promise.reject(new Error(`start:cluster exited before its demo banner:\n${output}`))),
      ]);
      const partnerCurl = output
        .split("\n")
        .find((line) => line.startsWith("curl ") && line.includes("DEMO-PARTNER-0001"))!;
      expect(partnerCurl).toContain(`http://localhost:${port}/api/v1/orders`);
      const { stdout } = await promisify(execFile)("sh", ["-c", `${partnerCurl} -w '\\n%{http_code}'`]);
      const [body, status] = stdout.trimEnd().split(/\n(?=\d{3}$)/);
      expect(status).toBe("201");
      expect(JSON.parse(body)).toMatchObject({
        externalId: "DEMO-PARTNER-0001",
        status: "pending",
        code: expect.stringMatching(/^ORD-/),
      });

      // Stopped as a user stops it, it ends after every service process it started, not before
      // (an orphan kept running, on NATS and the database, once the runner had gone).
      const services = childrenOf(child.pid!);
      expect(services.length).toBeGreaterThanOrEqual(7);
      child.kill("SIGTERM");
      await exited;
      expect(child.exitCode).toBe(0);
      expect(services.filter(isAlive)).toEqual([]);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  }, 120_000);
});
