/**
 * The faults of issue 10, each run against a live cluster under a steady load: a replica killed
 * (SIGKILL) or stopped (SIGTERM), NATS down, PostgreSQL down. The e2e fault suite asserts on
 * what they measure; `npm run bench:failover` prints it. The cluster: two processes of every
 * service, one gateway, a private nats-server (restartable) and the test database reached
 * through a TCP relay (closable), webhooks pushed to a local receiver. Four connections per
 * process: thirteen processes share a PostgreSQL that other test files use too.
 */
import type { ServiceName } from "../../shared/config/variables";
import { api } from "./http";
import { createApiWorld, type ApiWorld } from "./api-fixtures";
import { ANSWER_WITHIN_MS, READINESS_CHECK_TIMEOUT_MS } from "./deadlines";
import { startCluster, type Cluster } from "./cluster";
import { describeRun, mixedRequests, orderLosses, underLoad, type LoadRun, type OrderLosses } from "./failover";
import { NatsServer } from "./nats-server";
import { TcpRelay } from "./tcp-relay";
import { startReceiver, type WebhookReceiver } from "./webhook-receiver";

export const REPLICATED_SERVICES: ServiceName[] = ["clients", "crm", "catalogue", "references", "orders", "webhooks"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FaultCluster {
  cluster: Cluster;
  world: ApiWorld;
  nats: NatsServer;
  relay: TcpRelay;
  receiver: WebhookReceiver;
  /** Load and checks of one drill are told apart by this prefix of their externalIds. */
  nextRun(name: string): string;
  stop(): Promise<void>;
}

export async function startFaultCluster(env: Record<string, string> = {}): Promise<FaultCluster> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url?.startsWith("postgres")) throw new Error("The fault drills need PostgreSQL: set TEST_DATABASE_URL.");
  const nats = await NatsServer.start();
  const relay = TcpRelay.toUrl(url);
  let cluster: Cluster | undefined;
  let receiver: WebhookReceiver | undefined;
  const stop = async () => {
    await relay.open();
    await cluster?.stop();
    await relay.close();
    await nats.dispose();
    await receiver?.close();
  };
  try {
    await relay.open();
    const replicas = Object.fromEntries(REPLICATED_SERVICES.map((s) => [s, 2]));
    cluster = await startCluster({
      replicas,
      natsUrl: nats.url,
      processDatabaseUrl: (u) => relay.rewrite(u),
      env: {
        DATABASE_POOL_MAX: "4",
        WEBHOOK_RETRY_SCHEDULE: "1,1,1,2,2,5,5,10,10,30",
        WEBHOOK_DISPATCH_INTERVAL_MS: "100",
        ...env,
      },
    });
    const admin = api(cluster.baseUrl).as(cluster.adminKey);
    const world = await createApiWorld(admin);
    receiver = await startReceiver();
    // Plain fetch: the contract suites check this answer's shape; the drills only need the subscription.
    const subscribed = await fetch(`${cluster.baseUrl}/api/v1/webhooks`, {
      method: "PUT",
      headers: { authorization: `Bearer ${world.partnerKey}`, "content-type": "application/json" },
      body: JSON.stringify({ event: "sales_order_created", url: `${receiver.url}/orders` }),
    });
    if (subscribed.status !== 201)
      throw new Error(`subscribing the receiver answered ${subscribed.status}: ${await subscribed.text()}`);
    let runs = 0;
    const tag = Date.now().toString(36);
    return { cluster, world, nats, relay, receiver, nextRun: (name) => `fo-${tag}-${++runs}-${name}`, stop };
  } catch (err) {
    // Whatever was started goes: a nats-server child or a listening relay left running kept the
    // whole test run from exiting when the cluster failed to start.
    await stop().catch(() => undefined);
    throw err;
  }
}

export interface DrillResult {
  name: string;
  run: LoadRun;
  losses: OrderLosses;
  /** /readyz answers during the drill (the gateway's; an orders process's for the database), changes only. */
  readiness: number[];
  line: string;
}

/**
 * Polls the gateway's /readyz every 200 ms and keeps each change. A probe may take as long as its
 * checks' deadline: given up sooner, a slow answer on a busy machine would read as no answer (0).
 */
function watchReadiness(baseUrl: string): { stop(): Promise<number[]> } {
  const seen: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const signal = AbortSignal.timeout(READINESS_CHECK_TIMEOUT_MS + ANSWER_WITHIN_MS);
      const status = await fetch(`${baseUrl}/readyz`, { signal }).then(
        (r) => r.status,
        () => 0,
      );
      if (seen.at(-1) !== status) seen.push(status);
      await sleep(200);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return seen;
    },
  };
}

async function drill(
  fc: FaultCluster,
  name: string,
  perSecond: number,
  timing: { beforeMs: number; afterMs: number },
  fault: () => Promise<void>,
  watched = fc.cluster.baseUrl,
): Promise<DrillResult> {
  const runId = fc.nextRun(name.replace(/\W+/g, "-"));
  const readiness = watchReadiness(watched);
  const run = await underLoad(
    fc.cluster.baseUrl,
    perSecond,
    mixedRequests(fc.world, fc.cluster.adminKey, runId),
    timing,
    fault,
  );
  const losses = await orderLosses(fc.cluster.databaseUrl, run.outcomes, runId);
  const result = { name, run, losses, readiness: await readiness.stop(), line: "" };
  result.line = `${describeRun(name, run, losses)}, readiness ${result.readiness.join("→")}`;
  return result;
}

/** One replica of `service` killed (SIGKILL: a crash) or stopped (SIGTERM: a rolling update), started again after. */
export async function replicaDrill(
  fc: FaultCluster,
  service: ServiceName,
  signal: "SIGKILL" | "SIGTERM",
  perSecond: number,
  timing: { beforeMs: number; afterMs: number },
): Promise<DrillResult> {
  const victim = fc.cluster.processes.get(service)![0];
  const result = await drill(fc, `${signal} ${service}`, perSecond, timing, async () => {
    if (signal === "SIGKILL") await victim.kill("SIGKILL");
    else await victim.stop();
  });
  await victim.start();
  return result;
}

/** NATS down for `downMs` (stopped, then started again with its store: a broker restart). */
export function natsDrill(fc: FaultCluster, downMs: number, perSecond: number, afterMs: number): Promise<DrillResult> {
  return drill(fc, `NATS down ${downMs / 1000} s`, perSecond, { beforeMs: 2_000, afterMs }, () =>
    fc.nats.restart(downMs),
  );
}

/** PostgreSQL unreachable for `downMs`: connections cut and refused, as in a database restart. */
export function databaseDrill(
  fc: FaultCluster,
  downMs: number,
  perSecond: number,
  afterMs: number,
): Promise<DrillResult> {
  return drill(
    fc,
    `PostgreSQL down ${downMs / 1000} s`,
    perSecond,
    { beforeMs: 2_000, afterMs },
    async () => {
      await fc.relay.close();
      await sleep(downMs);
      await fc.relay.open();
    },
    `http://127.0.0.1:${fc.cluster.processes.get("orders")![1].port}`,
  );
}

/**
 * The partner's accepted orders of a drill whose sales_order_created webhook has not arrived
 * within `timeoutMs` (events are delivered at least once, after the fault if need be).
 */
export async function undeliveredEvents(fc: FaultCluster, result: DrillResult, timeoutMs: number): Promise<string[]> {
  const expected = result.run.outcomes
    .filter((o) => o.label.includes("partner") && (o.status === 201 || o.status === 200))
    .map((o) => o.externalId!);
  const missing = (): string[] => {
    const got = new Set(fc.receiver.received.map((r) => (JSON.parse(r.body) as { externalId?: string }).externalId));
    return expected.filter((id) => !got.has(id));
  };
  await fc.receiver.waitFor(() => missing().length === 0, timeoutMs).catch(() => undefined);
  return missing();
}
