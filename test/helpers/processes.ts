/**
 * Real service processes for end-to-end tests: each runs `node dist/runtime/start.js`
 * (built beforehand: `npm test` builds; this harness builds nothing) with the services named,
 * its output captured in a log file under test/artifacts/logs/, and can be killed (SIGKILL),
 * stopped (SIGTERM, as Kubernetes does) and started again on the same ports.
 *
 *   const webhooks = await startServiceProcess({ name: "webhooks-1", services: ["webhooks"], transporter: nats.url, databaseUrl });
 *   await webhooks.kill();        // SIGKILL, waits for the exit
 *   await webhooks.start();       // same environment, same ports
 *   await webhooks.stop();        // SIGTERM, waits for a clean exit
 *
 * "Ready" means the process answers 200 on /readyz: its broker started, its transporter is
 * connected and its services reach their database with migrations applied (shared/observability/readiness.ts).
 * It is asked on PORT when the process runs the gateway, else on HEALTH_PORT.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, type WriteStream } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { ASYNC_CONTEXT_FLAG } from "../../runtime/process-limits";
import type { ServiceName } from "../../shared/config/variables";
import { newEncryptionKeyEntry } from "../../shared/security/secret-box";
import { JETSTREAM_API_TIMEOUT_MS, READINESS_CHECK_TIMEOUT_MS } from "./deadlines";
import { namespacePrefix } from "./test-run";

// Compiled (dist/test/helpers, as the failover bench runs it) sits one folder deeper.
export const ROOT = path.resolve(
  __dirname,
  path.basename(path.resolve(__dirname, "../..")) === "dist" ? "../../.." : "../..",
);
const START = path.join(ROOT, "dist/runtime/start.js");
const NODE = path.join(ROOT, "node_modules/.bin/node");
export const LOG_DIR = path.join(ROOT, "test/artifacts/logs");

/**
 * The processes of one test file form one deployment: their own Moleculer namespace (and so
 * their own JetStream streams), never mixing with another file's processes or another run on
 * the same NATS server.
 */
export const TEST_NAMESPACE = `${namespacePrefix()}${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * The keys that encrypt stored webhook secrets (SECRETS_ENCRYPTION_KEYS, required on PostgreSQL),
 * one per test file: its in-process brokers and the processes it spawns read the same rows.
 */
export const TEST_SECRETS_ENCRYPTION_KEYS = newEncryptionKeyEntry("test");

export interface ServiceProcessOptions {
  /** Names the process in its NODE_ID, its log file and error messages. */
  name: string;
  services: ServiceName[];
  /** nats://... for the distributed mode; omitted for an embedded process. */
  transporter?: string;
  databaseUrl: string;
  /** Added to (and overriding) the defaults below. */
  env?: Record<string, string>;
  /** How long to wait for /readyz; a first start migrates, so it is generous. */
  readyTimeoutMs?: number;
}

/** Every port freePort handed out in this process: the kernel may offer a port again once it is closed. */
const handedOut = new Set<number>();

/**
 * A free TCP port on 127.0.0.1: free now (bound by whoever asks first), and never handed out
 * before by this process. Without that memory two processes of one cluster could be given the
 * same port (the kernel offers a just-closed port again), and the second to start would find
 * it taken while the first answered in its place.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The status of a GET, on a connection of its own that is closed after the answer (0 when there
 * is none): it leaves no kept-alive connection behind, which a gateway's drain would wait for at
 * SIGTERM as for any client's (up to its keep-alive timeout).
 */
export function statusOnce(
  url: string,
  { headers = {}, timeoutMs = 2_000 }: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(
      url,
      { agent: false, headers: { ...headers, connection: "close" }, timeout: timeoutMs },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", () => resolve(0));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(0));
  });
}

/** How a process that could not bind its port says so (moleculer-web, node:net). */
const PORT_TAKEN = /already in use|EADDRINUSE/;
const PORT_ATTEMPTS = 3;

export class ServiceProcess {
  readonly logFile: string;
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private log: WriteStream | null = null;
  private starts = 0;
  /** What the process printed from its latest start until it was ready (the log file is written a little later). */
  private lastStartOutput = "";

  /** Its ports, picked at its first start and kept by every later one; null before. */
  private ports: { port: number; probePort: number } | null = null;

  private constructor(readonly options: ServiceProcessOptions) {
    mkdirSync(LOG_DIR, { recursive: true });
    this.logFile = path.join(LOG_DIR, `${options.name}-${Date.now().toString(36)}.log`);
  }

  static async create(options: ServiceProcessOptions): Promise<ServiceProcess> {
    return new ServiceProcess(options);
  }

  /** The gateway's port when it runs one, else the probe port (HEALTH_PORT). */
  get port(): number {
    return this.startedPorts().port;
  }

  /** HEALTH_PORT: /healthz, /readyz and /metrics, in every process (the same as `port` without a gateway). */
  get probePort(): number {
    return this.startedPorts().probePort;
  }

  get hasGateway(): boolean {
    return this.options.services.includes("gateway");
  }

  /** The API's base URL, when the process runs the gateway. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Where this process answers the probes and /metrics (HEALTH_PORT), whatever it runs. */
  get probeUrl(): string {
    return `http://127.0.0.1:${this.probePort}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  environment(): Record<string, string> {
    const o = this.options;
    return {
      PATH: process.env.PATH ?? "",
      SERVICES: o.services.join(","),
      TRANSPORTER: o.transporter ?? "",
      DATABASE_URL: o.databaseUrl,
      NODE_ID: o.name,
      NAMESPACE: TEST_NAMESPACE,
      HOST: "127.0.0.1",
      PORT: this.hasGateway ? String(this.port) : "0",
      HEALTH_PORT: String(this.probePort),
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DEMO_DATA: "never",
      MIGRATE_ON_START: "true",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "0",
      // Every test request comes from 127.0.0.1: tests that send bad keys on purpose would block each other.
      AUTH_FAILURES_PER_MINUTE: "0",
      SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS,
      // A test cluster runs up to 15 processes on a server that takes 100 connections in all.
      DATABASE_POOL_MAX: "5",
      READINESS_CHECK_TIMEOUT_MS: String(READINESS_CHECK_TIMEOUT_MS),
      JETSTREAM_API_TIMEOUT_MS: String(JETSTREAM_API_TIMEOUT_MS),
      ...o.env,
    };
  }

  /**
   * Starts the process (again, on the same ports) and resolves once it is ready. Its first start
   * picks the ports just before spawning, and picks new ones when another process took one
   * meanwhile: a free port is only free at the instant it is found, and the test files running
   * beside this one keep binding ports too.
   */
  async start(): Promise<this> {
    if (this.ports) return this.spawnUntilReady();
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      this.ports = { port, probePort: this.hasGateway ? await freePort() : port };
      try {
        return await this.spawnUntilReady();
      } catch (err) {
        if (attempt === PORT_ATTEMPTS || !PORT_TAKEN.test(this.lastStartOutput)) throw err;
        this.ports = null;
      }
    }
  }

  private async spawnUntilReady(): Promise<this> {
    if (this.running) throw new Error(`${this.options.name} is already running`);
    if (!existsSync(START)) throw new Error(`${START} is missing: run \`npm run build\` first (\`npm test\` does).`);
    this.starts += 1;
    this.log ??= createWriteStream(this.logFile, { flags: "a" });
    this.log.write(`\n===== start #${this.starts} of ${this.options.name} at ${new Date().toISOString()} =====\n`);
    // AsyncLocalStorage as production runs it (runtime/process-limits.ts); the heap cap is left
    // out, since a test process may run several services at once.
    const child = spawn(NODE, [ASYNC_CONTEXT_FLAG, START], {
      cwd: ROOT,
      env: this.environment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    this.lastStartOutput = "";
    const keep = (chunk: Buffer) => (this.lastStartOutput += chunk.toString());
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    // "close": the process is gone and all it printed has been read; resolved once that is in
    // the log file too (writes land in order), so output() holds all of it.
    this.exited = new Promise((resolve) => {
      child.once("close", (code, signal) => {
        const line = `===== ${this.options.name} exited: ${signal ?? `code ${code}`} =====\n`;
        if (this.log) this.log.write(line, () => resolve());
        else resolve();
      });
    });
    try {
      await this.waitUntilReady(this.options.readyTimeoutMs ?? 60_000);
    } catch (err) {
      await this.kill();
      throw err;
    } finally {
      child.stdout?.off("data", keep);
      child.stderr?.off("data", keep);
    }
    return this;
  }

  /** Sends `signal` (SIGKILL by default: a crash) and waits for the process to be gone. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (this.running) this.child?.kill(signal);
    await this.exited;
  }

  /**
   * SIGTERM, as an orchestrator stops a pod, and waits for the exit; after `graceMs` it is
   * killed so that a drain that hangs cannot hang the tests. Resolves to the exit code.
   */
  async stop(graceMs = 20_000): Promise<number | null> {
    if (!this.running) return this.child?.exitCode ?? null;
    const timer = setTimeout(() => this.child?.kill("SIGKILL"), graceMs);
    await this.kill("SIGTERM");
    clearTimeout(timer);
    return this.child?.exitCode ?? null;
  }

  /** SIGSTOP: the process hangs, its connections stay open (a frozen or overloaded node). */
  pause(): void {
    if (this.running) this.child?.kill("SIGSTOP");
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    if (this.running) this.child?.kill("SIGCONT");
  }

  async restart(): Promise<this> {
    await this.stop();
    return this.start();
  }

  /** Everything the process printed, over all its starts. */
  output(): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, "utf8") : "";
  }

  /** Stops it and closes its log file (a later `start()` opens it again). */
  async dispose(): Promise<void> {
    await this.stop();
    await new Promise<void>((resolve) => (this.log ? this.log.end(resolve) : resolve()));
    this.log = null;
  }

  private async waitUntilReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const url = `http://127.0.0.1:${this.port}/readyz`;
    while (Date.now() < deadline) {
      if (!this.running)
        throw new Error(`${this.options.name} exited before it was ready; see ${this.logFile}:\n${this.tail()}`);
      const status = await statusOnce(url);
      // Only while it runs: a 200 from a process that failed to bind came from whoever holds the port.
      if (status === 200 && this.running) return;
      await sleep(100);
    }
    throw new Error(`${this.options.name} was not ready within ${timeoutMs} ms; see ${this.logFile}:\n${this.tail()}`);
  }

  private startedPorts(): { port: number; probePort: number } {
    if (!this.ports) throw new Error(`${this.options.name} has no ports before its first start`);
    return this.ports;
  }

  private tail(lines = 30): string {
    return this.output().split("\n").slice(-lines).join("\n");
  }
}

/** Creates and starts a process; `dispose()` it (or `disposeAll`) when done. */
export async function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  const p = await ServiceProcess.create(options);
  return p.start();
}

export async function disposeAll(processes: Iterable<ServiceProcess | undefined>): Promise<void> {
  await Promise.all([...processes].flatMap((p) => (p ? [p.dispose()] : [])));
}
