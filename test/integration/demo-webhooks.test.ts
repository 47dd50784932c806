/**
 * `npm run demo:webhooks` as a user runs it (`node dist/runtime/demo/demo-webhooks.js` in a folder of
 * their own): it ends with 0 after printing the signed delivery and its verification. Runs the
 * compiled code: `npm test` builds first (pretest); alone, run `npm run build`.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const DEMO = path.resolve(__dirname, "../../dist/runtime/demo/demo-webhooks.js");

function run(cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH, AUTH_FAILURES_PER_MINUTE: "0" };
    execFile(process.execPath, [DEMO], { cwd, env, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

describe("npm run demo:webhooks", () => {
  let folder: string;
  beforeAll(() => {
    if (!fs.existsSync(DEMO)) throw new Error("dist/ is missing: run `npm run build` first");
    folder = fs.mkdtempSync(path.join(os.tmpdir(), "oi-demo-webhooks-"));
  });
  afterAll(() => fs.rmSync(folder, { recursive: true, force: true }));

  it("when run, then it says the insecure-target setting is for the demo, prints the signed delivery of the validated order, verifies it and leaves no data folder", async () => {
    const { code, output } = await run(folder);
    expect({ code, output }).toEqual({
      code: 0,
      output: expect.stringContaining("Verified with the standardwebhooks library"),
    });
    expect(output).toMatch(
      /WEBHOOK_ALLOW_INSECURE_TARGETS=true for this demo only: the receiver is http:\/\/127\.0\.0\.1:\d+/,
    );
    expect(output).toMatch(/^ {2}x-webhook-event: sales_order_validated$/m);
    expect(output).toMatch(/^ {2}webhook-signature: v1,\S+$/m);
    expect(output).toMatch(/"status": "validated"/);
    expect(fs.readdirSync(folder)).toEqual([]);
  }, 120_000);
});
