/**
 * The processes a benchmark target runs: spawned from dist/ with Node 22 (this process's own
 * binary), their output kept (the last lines, for a failure message), stopped by their pid,
 * gracefully first. Every process started here is registered so that a failed or interrupted
 * run still stops all of them.
 */
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";

/** The repository root (this file runs from dist/bench/). */
export const ROOT = path.resolve(__dirname, "../..");
export const dist = (...parts: string[]) => path.join(ROOT, "dist", ...parts);

const KEPT_LINES = 40;
const STOP_GRACE_MS = 20_000;

export class BenchProcess {
  private readonly lines: string[] = [];
  /** Every line written, for "it logged N lines at warn or worse". */
  linesWritten = 0;
  /** Its /metrics, when the run that started it serves them (bench/process-metrics.ts). */
  metricsUrl: string | null = null;
  private readonly exited: Promise<void>;
  private readonly lineListeners = new Set<(line: string) => void>();

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      readline.createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
        this.linesWritten++;
        this.lines.push(line);
        if (this.lines.length > KEPT_LINES) this.lines.shift();
        for (const listener of this.lineListeners) listener(line);
      });
    }
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
  }

  /** `nodeArgs` go to Node itself (e.g. `--cpu-prof`), `args` to the script. */
  static start(
    name: string,
    script: string,
    env: NodeJS.ProcessEnv,
    args: string[] = [],
    nodeArgs: string[] = [],
  ): BenchProcess {
    const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const started = new BenchProcess(name, child);
    running.add(started);
    void started.exited.then(() => running.delete(started));
    return started;
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.name} has no pid: it did not start`);
    return this.child.pid;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  output(): string {
    return this.lines.join("\n");
  }

  /** Resolves when the process exits on its own; rejects with its output if it fails. */
  async finished(): Promise<void> {
    await this.exited;
    if (this.child.exitCode !== 0)
      throw new Error(`${this.name} exited with ${this.child.exitCode ?? this.child.signalCode}:\n${this.output()}`);
  }

  /** The next line the process writes that passes `test`; rejects if it exits or `timeoutMs` passes first. */
  waitForLine(test: (line: string) => boolean, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const done = (settle: () => void) => {
        this.lineListeners.delete(listener);
        clearTimeout(timer);
        settle();
      };
      const listener = (line: string) => {
        if (test(line)) done(() => resolve(line));
      };
      const timer = setTimeout(
        () =>
          done(() =>
            reject(new Error(`${this.name} did not write the awaited line within ${timeoutMs} ms:\n${this.output()}`)),
          ),
        timeoutMs,
      );
      this.lineListeners.add(listener);
      void this.exited.then(() =>
        done(() => reject(new Error(`${this.name} exited before writing the awaited line:\n${this.output()}`))),
      );
    });
  }

  /** A signal the script itself understands (e.g. "go" for a load client). */
  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  /** SIGTERM (the services drain in-flight work), SIGKILL if it is still there after the grace. */
  async stop(): Promise<void> {
    if (!this.alive) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

const running = new Set<BenchProcess>();

export async function stopAll(processes: Iterable<BenchProcess> = running): Promise<void> {
  await Promise.all([...processes].map((p) => p.stop()));
}

/** `count` distinct ports nobody listens on right now, on the loopback address (held open together, so they differ). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer().once("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

export const freePort = async (): Promise<number> => (await freePorts(1))[0];

/** Polls `url` until it answers 200; fails early, with its output, if the process dies. */
export async function waitUntilReady(member: BenchProcess, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!member.alive) throw new Error(`${member.name} exited while starting:\n${member.output()}`);
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${member.name} was not ready at ${url} within ${timeoutMs} ms:\n${member.output()}`);
}
