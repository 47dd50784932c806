/**
 * A jest reporter that ends the run with one line per reason tests were skipped:
 *
 *   skipped 12 tests: needs NATS with JetStream: TEST_NATS_URL is not set (start-cluster.test.ts, …)
 *
 * Test files skip through test/helpers/prerequisites.ts, which records each file's reasons in
 * the file this reporter names in OI_TEST_SKIPS_FILE (set here, before any worker starts, so the
 * workers inherit it). A skipped test whose file recorded no reason is listed too: no skip is
 * silent. Plain JavaScript: jest loads reporters without its transform.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const NO_REASON = "no reason recorded (an it.skip or describe.skip not made by test/helpers/prerequisites.ts)";

export default class SkipSummaryReporter {
  constructor() {
    this.file = path.join(
      os.tmpdir(),
      `order-intake-test-skips-${process.pid}-${randomBytes(3).toString("hex")}.jsonl`,
    );
    writeFileSync(this.file, "");
    process.env.OI_TEST_SKIPS_FILE = this.file;
  }

  /** testPath → its reasons, as the test files recorded them. */
  recorded() {
    const reasons = new Map();
    if (!existsSync(this.file)) return reasons;
    for (const line of readFileSync(this.file, "utf8").split("\n").filter(Boolean)) {
      const { testPath, reasons: why } = JSON.parse(line);
      reasons.set(testPath, why.join("; "));
    }
    return reasons;
  }

  onRunComplete(_contexts, results) {
    const recorded = this.recorded();
    rmSync(this.file, { force: true });
    /** reason → { count, files } */
    const byReason = new Map();
    for (const file of results.testResults) {
      const skipped = file.numPendingTests + (file.numTodoTests ?? 0);
      if (skipped === 0) continue;
      const reason = recorded.get(file.testFilePath) ?? NO_REASON;
      const entry = byReason.get(reason) ?? { count: 0, files: [] };
      entry.count += skipped;
      entry.files.push(path.basename(file.testFilePath));
      byReason.set(reason, entry);
    }
    if (byReason.size === 0) return;
    const lines = [...byReason].map(
      ([reason, { count, files }]) => `skipped ${count} test${count === 1 ? "" : "s"}: ${reason} (${files.join(", ")})`,
    );
    process.stderr.write(`\n${lines.join("\n")}\n`);
  }

  getLastError() {
    return undefined;
  }
}
