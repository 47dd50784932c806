/**
 * `npm start` (node dist/runtime/start.js) refuses in one line what a user can fix: an embedded
 * data folder another live process holds, a database that does not answer, a wrong setting.
 * The holder's pid file goes with it when it stops. Runs the compiled code: `npm test` builds
 * first (pretest); alone, run `npm run build`.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LOCK_FILE } from "../../shared/database/data-folder-lock";
import { freePort, TEST_SECRETS_ENCRYPTION_KEYS } from "../helpers/processes";

const DIST = path.resolve(__dirname, "../../dist/runtime");

interface Run {
  code: number;
  stderr: string;
}

function run(script: string, args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(DIST, script), ...args],
      { cwd, env: { PATH: process.env.PATH, HEALTH_PORT: "0", ...env }, timeout: 60_000 },
      (err, _stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

async function readyAt(port: number, child: ChildProcess): Promise<void> {
  while (child.exitCode === null) {
    if (
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("the first start exited before it was ready");
}

let folder: string;
beforeAll(() => {
  if (!fs.existsSync(path.join(DIST, "start.js"))) throw new Error("dist/ is missing: run `npm run build` first");
  folder = fs.mkdtempSync(path.join(os.tmpdir(), "oi-refusals-"));
});
afterAll(() => fs.rmSync(folder, { recursive: true, force: true }));

describe("when a data folder is held by a running npm start", () => {
  it("then a second start and a CLI command are refused in one line naming the holder's pid, and the pid file goes when the holder stops", async () => {
    const port = await freePort();
    const first = spawn(process.execPath, [path.join(DIST, "start.js")], {
      cwd: folder,
      env: { PATH: process.env.PATH, PORT: String(port), HEALTH_PORT: "0", DEMO_DATA: "never", LOG_LEVEL: "warn" },
      stdio: "ignore",
    });
    const exited = new Promise((resolve) => first.once("exit", resolve));
    try {
      await readyAt(port, first);
      const lockFile = path.join(folder, ".data/pglite", LOCK_FILE);
      expect(fs.readFileSync(lockFile, "utf8").trim()).toBe(String(first.pid));

      const refusal = `The data folder ${fs.realpathSync(folder)}/.data/pglite is in use by process ${first.pid}`;
      const second = await run("start.js", [], folder, { PORT: String(await freePort()) });
      expect(second.code).toBe(1);
      expect(second.stderr.trim().split("\n")).toEqual([expect.stringContaining(refusal)]);
      const cli = await run("cli.js", ["clients", "list"], folder, {});
      expect(cli.code).toBe(1);
      expect(cli.stderr.trim().split("\n")).toEqual([expect.stringContaining(refusal)]);

      first.kill("SIGTERM");
      await exited;
      expect(fs.existsSync(lockFile)).toBe(false);
      expect((await run("cli.js", ["clients", "list"], folder, {})).code).toBe(0);
    } finally {
      first.kill("SIGKILL");
    }
  }, 90_000);
});

describe("when the database does not answer or a setting is wrong", () => {
  it("then start exits 1 with one line naming the database and why", async () => {
    const result = await run("start.js", [], folder, {
      PORT: String(await freePort()),
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/nowhere",
      SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS,
      LOG_LEVEL: "fatal",
    });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      "The database at postgres://127.0.0.1:1/nowhere does not answer (connect ECONNREFUSED 127.0.0.1:1): start it, or set DATABASE_URL to one that runs.",
    ]);
  });

  it("then start exits 1 naming the variable, its value and what it takes", async () => {
    const result = await run("start.js", [], folder, { PORT: "eighty" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('PORT="eighty" is not valid: expected a whole number');
  });
});
