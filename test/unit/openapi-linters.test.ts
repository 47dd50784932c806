/**
 * Third-party tools accept the committed OpenAPI document (issue 20): swagger-parser validates
 * it (the base of many toolchains), Spectral lints it with spectral:oas and the OWASP API
 * Security ruleset, Redocly with its recommended rules — each with the project's committed
 * ruleset (.ci/openapi/), where every rule turned off says why. Any finding, warnings included,
 * fails: a new one is either fixed or turned off with its reason.
 */
import { execFile } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const DOCUMENT = path.join(ROOT, "docs/openapi.json");

/** Runs a script with the Node that runs the tests; its output, whatever its exit code. */
function run(script: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(ROOT, script), ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err && !stdout) reject(new Error(`${script} failed: ${stderr || err.message}`));
        else resolve(stdout);
      },
    );
  });
}

interface Finding {
  rule: string;
  where: string;
  message: string;
}

async function spectral(): Promise<Finding[]> {
  const out = await run("node_modules/@stoplight/spectral-cli/dist/index.js", [
    "lint",
    DOCUMENT,
    "--ruleset",
    ".ci/openapi/spectral.yaml",
    "--format",
    "json",
    "--quiet",
  ]);
  const results = JSON.parse(out) as { code: string; path: string[]; message: string }[];
  return results.map((r) => ({ rule: r.code, where: r.path.join("/"), message: r.message }));
}

async function redocly(): Promise<Finding[]> {
  const out = await run(
    "node_modules/@redocly/cli/bin/cli.js",
    ["lint", DOCUMENT, "--config", ".ci/openapi/redocly.yaml", "--format", "json"],
    // No update check against the npm registry (telemetry is off in the config).
    { REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
  );
  const report = JSON.parse(out.slice(out.indexOf("{"))) as {
    problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
  };
  return report.problems.map((p) => ({ rule: p.ruleId, where: p.location[0]?.pointer ?? "", message: p.message }));
}

async function swaggerParser(): Promise<{ valid: boolean; message: string }> {
  return JSON.parse(await run("test/helpers/swagger-parser-validate.mjs", [DOCUMENT])) as {
    valid: boolean;
    message: string;
  };
}

// The three at once: each takes a few seconds, mostly starting up.
const linted = Promise.all([spectral(), redocly(), swaggerParser()]);

describe("the committed OpenAPI document, read by third-party tools", () => {
  it("when swagger-parser validates it, then it is valid", async () => {
    const [, , validated] = await linted;
    expect(validated).toEqual({ valid: true, message: "" });
  }, 60_000);

  it("when Spectral lints it (spectral:oas and the OWASP API Security ruleset), then it finds nothing", async () => {
    const [found] = await linted;
    expect(found).toEqual([]);
  }, 60_000);

  it("when Redocly lints it (recommended), then it finds nothing", async () => {
    const [, found] = await linted;
    expect(found).toEqual([]);
  }, 60_000);
});
