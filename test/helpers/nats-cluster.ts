/**
 * A NATS cluster with JetStream on loopback for one test file (or the bench): three
 * `nats-server` processes on free ports, routed to each other, each with its own store folder
 * inside one temporary folder that `dispose()` removes. A node can be killed and started again
 * with its store, as a pod of the official Helm chart is. Tells which node leads which stream.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { connect, type ConsumerInfo, type JetStreamManager, type StreamInfo } from "nats";
import { NatsServer } from "./nats-server";
import { freePort } from "./processes";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const LEADER_LINE = /^\[\d+\] (\S+ \S+) \[INF\] JetStream cluster new (?:stream|consumer) leader for '\$G > ([^']+)'/gm;

/** A stream made and removed to learn that JetStream can place `replicas` copies. */
const PROBE_STREAM = "oi_cluster_probe";

export class NatsCluster {
  private constructor(
    readonly nodes: NatsServer[],
    private readonly folder: string,
  ) {}

  static async start(size = 3): Promise<NatsCluster> {
    const folder = mkdtempSync(path.join(os.tmpdir(), "nats-cluster-"));
    const routePorts: number[] = [];
    for (let i = 0; i < size; i++) routePorts.push(await freePort());
    const routes = routePorts.map((port) => `nats://127.0.0.1:${port}`).join(",");
    const nodes: NatsServer[] = [];
    const cluster = new NatsCluster(nodes, folder);
    try {
      for (const [i, routePort] of routePorts.entries()) {
        nodes.push(
          await NatsServer.start({
            name: `n${i + 1}`,
            storeDir: path.join(folder, `n${i + 1}`),
            args: ["--cluster_name", "oi-test", "--cluster", `nats://127.0.0.1:${routePort}`, "--routes", routes],
          }),
        );
      }
      await cluster.waitForPlacement(size);
      return cluster;
    } catch (err) {
      await cluster.dispose();
      throw err;
    }
  }

  /** TRANSPORTER for the processes: every node, separated by commas. */
  get url(): string {
    return this.nodes.map((n) => n.url).join(",");
  }

  node(name: string): NatsServer {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no NATS node named ${name}`);
    return node;
  }

  /**
   * Uses a connection to the nodes that run (any of them answers); `timeoutMs` bounds each of
   * its JetStream requests (an answer about a stream that has no leader waits for one).
   */
  async withManager<T>(use: (jsm: JetStreamManager) => Promise<T>, timeoutMs = 5_000): Promise<T> {
    const servers = this.nodes.filter((n) => n.running).map((n) => n.url);
    const nc = await connect({ servers, name: "oi-test-cluster" });
    try {
      return await use(await nc.jetstreamManager({ timeout: timeoutMs }));
    } finally {
      await nc.close();
    }
  }

  /**
   * The leader elections the nodes logged ("JetStream cluster new stream leader for '$G > <stream>'",
   * and the same for a consumer, '$G > <stream> > <consumer>'), with when each was logged.
   */
  elections(): { at: number; of: string }[] {
    return this.nodes.flatMap((node) =>
      [...readFileSync(node.logFile, "utf8").matchAll(LEADER_LINE)].map((m) => ({
        // nats-server logs its local time, as `new Date` reads this form.
        at: new Date(m[1]).getTime(),
        of: m[2],
      })),
    );
  }

  /** Every stream, with its cluster's leader and replicas. */
  streams(): Promise<StreamInfo[]> {
    return this.withManager(async (jsm) => {
      const infos: StreamInfo[] = [];
      for await (const info of jsm.streams.list()) infos.push(info);
      return infos;
    });
  }

  /** The durable consumers of a stream, with their leader and replicas. */
  consumers(stream: string): Promise<ConsumerInfo[]> {
    return this.withManager(async (jsm) => {
      const infos: ConsumerInfo[] = [];
      for await (const info of jsm.consumers.list(stream)) infos.push(info);
      return infos;
    });
  }

  /**
   * Waits until JetStream can place a stream on `replicas` nodes: every node has joined the
   * meta group. Before that, a stream asked for 3 replicas would be refused (and "auto" take 2).
   */
  private async waitForPlacement(replicas: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const placed = await this.withManager(async (jsm) => {
        await jsm.streams.add({ name: PROBE_STREAM, subjects: [PROBE_STREAM], num_replicas: replicas });
        await jsm.streams.delete(PROBE_STREAM);
      }).then(
        () => true,
        (err: unknown) => err,
      );
      if (placed === true) return;
      if (Date.now() > deadline) throw new Error(`the NATS cluster did not form: ${String(placed)}`);
      await sleep(250);
    }
  }

  /** Stops every node and removes their stores. */
  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.dispose()));
    rmSync(this.folder, { recursive: true, force: true });
  }
}
