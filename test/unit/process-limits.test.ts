/**
 * The Node flags of both modes (runtime/process-limits.ts): `npm start` and the test runner pass
 * them, and the Node this project runs on accepts them — an unknown flag would stop a process at
 * once — as arguments and, for the distributed mode, as NODE_OPTIONS (start:cluster, the image).
 * Under them, AsyncLocalStorage (the request and tracing contexts) still follows every kind of
 * continuation the services use.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  ASYNC_CONTEXT_FLAG,
  EMBEDDED_NODE_FLAGS,
  SERVICE_NODE_FLAGS,
  SERVICE_NODE_OPTIONS,
} from "../../runtime/process-limits";

// Read, not imported: a JSON import would copy package.json into dist/.
const pkg = JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as {
  scripts: Record<string, string>;
};

/**
 * A store set around an async function, read back after an await, a timer, an immediate, a
 * nextTick, an EventEmitter's listener and a promise settled elsewhere; and no store outside.
 */
const CONTEXT_FLOW = `
const { AsyncLocalStorage } = require("node:async_hooks");
const { EventEmitter } = require("node:events");
const als = new AsyncLocalStorage();
const seen = [];
const settle = { resolve: undefined };
const later = new Promise((r) => (settle.resolve = r));
const emitter = new EventEmitter();
als.run("request-1", async () => {
  await null; seen.push(als.getStore());
  await new Promise((r) => setTimeout(r, 1)); seen.push(als.getStore());
  await new Promise((r) => setImmediate(r)); seen.push(als.getStore());
  await new Promise((r) => process.nextTick(r)); seen.push(als.getStore());
  emitter.once("e", () => seen.push(als.getStore())); emitter.emit("e");
  await later; seen.push(als.getStore());
}).then(() => process.stdout.write(JSON.stringify({ seen, outside: als.getStore() ?? null })));
setTimeout(() => settle.resolve(), 5);
`;

function run(args: string[], env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(process.execPath, args, { encoding: "utf8", env });
}

describe("the Node flags of each mode", () => {
  it("when npm start runs, then node gets EMBEDDED_NODE_FLAGS before the entry point", () => {
    expect(pkg.scripts.start).toBe(`node ${EMBEDDED_NODE_FLAGS.join(" ")} dist/runtime/start.js`);
  });

  it("when the tests run, then Jest's processes use the same AsyncLocalStorage as the services", () => {
    // One Jest command (the `jest` script) carries the flag; every tier and runner goes through it.
    expect(pkg.scripts.jest.split(" ")).toEqual(
      expect.arrayContaining([ASYNC_CONTEXT_FLAG, "node_modules/jest/bin/jest.js"]),
    );
    for (const script of ["test", "test:unit", "test:integration", "test:e2e"])
      expect(pkg.scripts[script]).toMatch(/^npm run -s jest --( |$)/);
    for (const file of ["test/containers/run.sh", "test/containers/compose-smoke.sh"]) {
      const text = readFileSync(path.join(__dirname, "../..", file), "utf8");
      expect(text).toMatch(/npm run -s jest -- /);
      expect(text).not.toMatch(/jest\/bin\/jest\.js/);
    }
    expect(process.execArgv).toContain(ASYNC_CONTEXT_FLAG);
  });

  it.each([
    ["the embedded flags as arguments", EMBEDDED_NODE_FLAGS, {}],
    ["the service flags as arguments", SERVICE_NODE_FLAGS, {}],
    ["the service flags as NODE_OPTIONS", [], { NODE_OPTIONS: SERVICE_NODE_OPTIONS }],
  ])("when node is given %s, then it runs and a context follows every continuation", (_, flags, env) => {
    const out = JSON.parse(run([...flags, "-e", CONTEXT_FLOW], { ...process.env, ...env })) as {
      seen: string[];
      outside: string | null;
    };
    expect(out).toEqual({ seen: Array(6).fill("request-1"), outside: null });
  });
});
