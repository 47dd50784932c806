/**
 * Jest's own runner (jest-runner, the one `npm test` would use anyway), with one addition: a test
 * file whose opening comment says `@run-alone` runs after all the others, one such file at a time
 * and nothing else of the run beside it. Every other file shares jest's workers (`maxWorkers` in
 * package.json), several at once: most of their time is spent waiting on sockets, processes and
 * timers, not on the CPU.
 *
 * A file runs alone when what it measures is the machine as much as the product: the failover
 * drills hold a 13-process cluster under 100 requests a second and bound its error windows to
 * 2 s, and they use more PostgreSQL connections than the server could spare for the others.
 * Such a file says why beside the tag (test/README.md lists them).
 */
import { readFileSync } from "node:fs";
import TestRunner from "jest-runner";

/** The file's opening comment (its docblock) names the tag. */
const OPENING_COMMENT = /^\s*\/\*\*[\s\S]*?\*\//;

function runsAlone(path) {
  const opening = OPENING_COMMENT.exec(readFileSync(path, "utf8"));
  return opening !== null && /@run-alone\b/.test(opening[0]);
}

export default class AloneLastRunner extends TestRunner {
  async runTests(tests, watcher, options) {
    const alone = tests.filter((test) => runsAlone(test.path));
    const together = tests.filter((test) => !alone.includes(test));
    if (together.length > 0) await super.runTests(together, watcher, options);
    // In jest's own process, one after the other, as `--runInBand` runs every file.
    if (alone.length > 0 && !watcher.isInterrupted())
      await super.runTests(alone, watcher, { ...options, serial: true });
  }
}
