/**
 * The embedded process's Node flags (runtime/process-limits.ts): `npm start` passes them, and the
 * Node this project runs on accepts them (an unknown V8 flag would stop `npm start` at once).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { EMBEDDED_NODE_FLAGS } from "../../runtime/process-limits";

// Read, not imported: a JSON import would copy package.json into dist/.
const pkg = JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as {
  scripts: Record<string, string>;
};

describe("the embedded process's Node flags", () => {
  it("when npm start runs, then node gets EMBEDDED_NODE_FLAGS before the entry point", () => {
    expect(pkg.scripts.start).toBe(`node ${EMBEDDED_NODE_FLAGS.join(" ")} dist/runtime/start.js`);
  });

  it("when node is given them, then it accepts them and runs", () => {
    expect(
      execFileSync(process.execPath, [...EMBEDDED_NODE_FLAGS, "-e", "process.stdout.write('ok')"], {
        encoding: "utf8",
      }),
    ).toBe("ok");
  });
});
