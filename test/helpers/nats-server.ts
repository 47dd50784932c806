/**
 * A private NATS server with JetStream for one test file: its own port and its own store
 * folder, so a test can stop, kill and restart it without touching the shared server (4222)
 * or another test's. Restarting keeps the port and the store: streams, durable consumers and
 * unacknowledged messages survive, as with a real server restart. A node of a cluster is one
 * with a name and the cluster's arguments (test/helpers/nats-cluster.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, type WriteStream } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort, LOG_DIR } from "./processes";

/** NATS_SERVER_BINARY, else the first `nats-server` on PATH or in the sbin folders Debian uses. */
function findNatsServer(): string | null {
  if (process.env.NATS_SERVER_BINARY) return process.env.NATS_SERVER_BINARY;
  const folders = [...(process.env.PATH ?? "").split(path.delimiter), "/usr/local/sbin", "/usr/sbin", "/sbin"];
  for (const folder of folders.filter(Boolean)) {
    const candidate = path.join(folder, "nats-server");
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

export const NATS_SERVER_BINARY = findNatsServer() ?? "nats-server";

export function natsServerAvailable(): boolean {
  return existsSync(NATS_SERVER_BINARY);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export interface NatsServerOptions {
  /** Its server_name: every node of a JetStream cluster needs its own. */
  name?: string;
  /** More command-line arguments (a cluster node's --cluster_name, --cluster, --routes). */
  args?: string[];
  /** Where JetStream stores its data: a new temporary folder when not given. */
  storeDir?: string;
  port?: number;
}

export class NatsServer {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly log: WriteStream;
  readonly logFile: string;

  private constructor(
    readonly port: number,
    readonly storeDir: string,
    private readonly extraArgs: string[],
    readonly name: string | null,
  ) {
    mkdirSync(LOG_DIR, { recursive: true });
    this.logFile = path.join(LOG_DIR, `nats-${port}.log`);
    this.log = createWriteStream(this.logFile, { flags: "a" });
  }

  static async start(options: NatsServerOptions = {}): Promise<NatsServer> {
    const server = new NatsServer(
      options.port ?? (await freePort()),
      options.storeDir ?? mkdtempSync(path.join(os.tmpdir(), "nats-js-")),
      options.args ?? [],
      options.name ?? null,
    );
    await server.start();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(timeoutMs = 10_000): Promise<void> {
    if (this.running) throw new Error("nats-server is already running");
    const args = ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir];
    if (this.name) args.push("-n", this.name);
    const child = spawn(NATS_SERVER_BINARY, [...args, ...this.extraArgs], { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    const deadline = Date.now() + timeoutMs;
    while (!(await accepts(this.port))) {
      if (!this.running) throw new Error(`nats-server exited at start; see ${this.logFile}`);
      if (Date.now() > deadline)
        throw new Error(`nats-server did not listen within ${timeoutMs} ms; see ${this.logFile}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGTERM by default (a clean shutdown); SIGKILL for a crash. Waits for the exit. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    if (!this.running) return;
    this.child?.kill(signal);
    await this.exited;
  }

  async restart(downForMs = 0): Promise<void> {
    await this.stop();
    if (downForMs > 0) await new Promise((r) => setTimeout(r, downForMs));
    await this.start();
  }

  /** Stops it for good and removes its store. */
  async dispose(): Promise<void> {
    await this.stop();
    this.log.end();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}
