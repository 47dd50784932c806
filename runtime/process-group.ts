/**
 * Runs a group of child processes as one: their output prefixed with their name, SIGTERM and
 * SIGINT forwarded, and the group stopped as a whole when any member dies on its own.
 * Resolves with the exit code the runner should use (0 only for a clean, requested stop).
 */
import { spawn, type ChildProcess } from "node:child_process";
import readline from "node:readline";
import type { Readable, Writable } from "node:stream";

export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export interface GroupOptions {
  /** After a stop is requested, members still running this long later are killed. */
  killAfterMs: number;
  log(line: string): void;
  colors: boolean;
}

const PALETTE = [36, 33, 35, 32, 34, 96, 93, 95];

function prefixOf(name: string, index: number, width: number, colors: boolean): string {
  const label = `${name.padEnd(width)} |`;
  return colors ? `\x1b[${PALETTE[index % PALETTE.length]}m${label}\x1b[0m ` : `${label} `;
}

function pipeLines(from: Readable | null, to: Writable, prefix: string): void {
  if (!from) return;
  readline.createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => to.write(prefix + line + "\n"));
}

export function runProcessGroup(specs: ChildSpec[], opts: GroupOptions): Promise<number> {
  const width = Math.max(...specs.map((s) => s.name.length));
  const running = new Map<string, ChildProcess>();
  let stopRequested = false;
  let failed = false;

  return new Promise((resolve) => {
    const stopAll = (signal: NodeJS.Signals) => {
      if (stopRequested) {
        // A second Ctrl-C means "now".
        for (const child of running.values()) child.kill("SIGKILL");
        return;
      }
      stopRequested = true;
      for (const child of running.values()) child.kill(signal);
      setTimeout(() => {
        for (const [name, child] of running) {
          opts.log(`${name} did not stop in time: killing it`);
          child.kill("SIGKILL");
        }
      }, opts.killAfterMs).unref();
    };
    const onSignal = (signal: NodeJS.Signals) => {
      opts.log(`${signal} received: stopping ${[...running.keys()].join(", ")}`);
      stopAll(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);

    const finished = (name: string, code: number | null, signal: NodeJS.Signals | null) => {
      if (!running.delete(name)) return;
      const clean = code === 0 || (stopRequested && signal !== null && signal !== "SIGKILL");
      if (!clean) failed = true;
      opts.log(`${name} exited (${signal ?? `code ${code}`})`);
      if (!stopRequested) {
        opts.log(`${name} stopped on its own: stopping the others`);
        failed = true;
        stopAll("SIGTERM");
      }
      if (running.size === 0) {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
        resolve(failed ? 1 : 0);
      }
    };

    specs.forEach((spec, i) => {
      const child = spawn(spec.command, spec.args, { env: spec.env, stdio: ["ignore", "pipe", "pipe"] });
      running.set(spec.name, child);
      const prefix = prefixOf(spec.name, i, width, opts.colors);
      pipeLines(child.stdout, process.stdout, prefix);
      pipeLines(child.stderr, process.stderr, prefix);
      // "close" (not "exit"): every line the child wrote has been read by then.
      child.on("close", (code, signal) => finished(spec.name, code, signal));
      child.on("error", (err) => {
        opts.log(`${spec.name} could not start: ${err.message}`);
        finished(spec.name, 1, null);
      });
    });
  });
}
