/**
 * The operator's entry points as they are run: `node dist/runtime/migrate.js` and
 * `node dist/runtime/cli.js`, as child processes on a database of their own.
 * They run the compiled code: `npm test` builds first (pretest); alone, run `npm run build`.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import knexFactory from "knex";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

const DIST = path.resolve(__dirname, "../../dist/runtime");
const SCHEMAS = ["catalogue", "clients", "crm", "orders", "references", "webhooks"];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(script: string, args: string[], databaseUrl: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(DIST, script), ...args],
      {
        env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const cli = (args: string[], url: string) => run("cli.js", args, url);

/**
 * What `clients.authenticate` answers for each key (the client id, or the error code), asked
 * from another process: a PGlite folder cannot be opened inside jest's module sandbox.
 */
async function authenticate(keys: string[], url: string): Promise<(number | string)[]> {
  const script = `
    const { loadConfig } = require(${JSON.stringify(path.resolve(DIST, "../shared/config/config.js"))});
    const { createBroker, stopBroker } = require(${JSON.stringify(path.join(DIST, "broker.js"))});
    (async () => {
      const broker = createBroker(loadConfig({ DATABASE_URL: process.env.DATABASE_URL, SERVICES: "clients" }), { logger: false });
      await broker.start();
      const answers = [];
      for (const key of process.argv.slice(1)) {
        answers.push(await broker.call("clients.authenticate", { key }).then((p) => p.clientId, (e) => e.code));
      }
      console.log(JSON.stringify(answers));
      await stopBroker(broker);
    })();`;
  const res = await new Promise<Run>((resolve) => {
    execFile(
      process.execPath,
      ["-e", script, ...keys],
      { env: { PATH: process.env.PATH, DATABASE_URL: url }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
  if (res.code !== 0) throw new Error(res.stderr);
  return JSON.parse(res.stdout) as (number | string)[];
}

describe("db:migrate and the CLI, run as processes", () => {
  let database: TestDatabase;
  let url: string;
  let dataDir: string | null = null;

  beforeAll(async () => {
    if (!fs.existsSync(path.join(DIST, "cli.js"))) throw new Error("dist/ is missing: run `npm run build` first");
    database = await createTestDatabase();
    // Several processes share it: an in-memory PGlite would be a new database in each one.
    if (database.kind === "pglite") dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "oi-cli-"));
    url = dataDir ? `pglite://${dataDir}` : database.url;
  });
  afterAll(async () => {
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("when migrate runs twice on an empty database, then both exit 0 and every service's schema exists", async () => {
    expect((await run("migrate.js", [], url)).code).toBe(0);
    const again = await run("migrate.js", [], url);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("Migrations are current.");
    if (dataDir) return; // PGlite's folder is checked through the CLI below.
    const db = knexFactory({ client: "pg", connection: url, pool: { min: 0, max: 1 } });
    try {
      const { rows } = await db.raw<{ rows: { schema_name: string }[] }>(
        "SELECT schema_name FROM information_schema.schemata WHERE schema_name = ANY(?) ORDER BY 1",
        [SCHEMAS],
      );
      expect(rows.map((r) => r.schema_name)).toEqual(SCHEMAS);
    } finally {
      await db.destroy();
    }
  });

  it("when migrate cannot reach PostgreSQL, then it exits 1 and says why", async () => {
    const res = await run("migrate.js", [], "postgres://postgres@127.0.0.1:1/none");
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/Migration failed: .*ECONNREFUSED/);
  });

  it("when a client is created, listed, rotated and revoked, then each key is printed once and only the last one works", async () => {
    const created = await cli(["clients", "create", "--name", "CLI partner", "--kind", "partner", "--json"], url);
    expect(created.code).toBe(0);
    const client = JSON.parse(created.stdout) as { id: number; apiKey: string; scopes: string[] };
    expect(client.apiKey).toMatch(/^oik_/);

    const listed = await cli(["clients", "list", "--json"], url);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: client.id, name: "CLI partner", revokedAt: null }),
    ]);
    expect(listed.stdout).not.toContain(client.apiKey);

    const rotated = await cli(["clients", "rotate-key", String(client.id)], url);
    expect(rotated.code).toBe(0);
    const newKey = /^\s+(oik_\S+)$/m.exec(rotated.stdout)?.[1];
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(client.apiKey);

    expect(await authenticate([client.apiKey, newKey!], url)).toEqual([401, client.id]);

    expect((await cli(["clients", "revoke", String(client.id)], url)).code).toBe(0);
    const twice = await cli(["clients", "revoke", String(client.id)], url);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain(`No client with id ${client.id}`);
  });

  it("when a client is updated, then only the given fields change, and a refused value exits 2 naming its flag", async () => {
    const created = JSON.parse(
      (await cli(["clients", "create", "--name", "CLI back office", "--kind", "backoffice", "--json"], url)).stdout,
    ) as { id: number };
    const updated = await cli(
      [
        "clients",
        "update",
        String(created.id),
        "--scopes",
        "crm,webhooks",
        "--events",
        "sales_order_cancelled",
        "--json",
      ],
      url,
    );
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      id: created.id,
      name: "CLI back office",
      scopes: ["crm", "webhooks"],
      webhookEvents: ["sales_order_cancelled"],
    });
    const refused = await cli(["clients", "update", String(created.id), "--scopes", "crm,root"], url);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--scopes\[1\]: /);
  });

  it("when the command line is wrong or a value is refused, then it exits 2 and names the problem", async () => {
    const unknown = await cli(["clients", "frobnicate"], url);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "clients frobnicate"');
    const refused = await cli(["clients", "create", "--name", "X", "--kind", "robot"], url);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--kind: /);
    const missing = await cli(["clients", "create", "--kind", "admin"], url);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--name is required");
  });
});
