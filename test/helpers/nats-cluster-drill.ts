/**
 * The drill of issue 26, for test/e2e/nats-cluster.test.ts and `npm run bench:nats-cluster`:
 * the distributed mode (one process per service) on a three-node NATS cluster
 * (test/helpers/nats-cluster.ts) and PostgreSQL, a partner's orders created and validated at a
 * steady rate, a local receiver subscribed to both events, and the node that leads the most of
 * the project's streams killed (SIGKILL) and started again. What a subscriber sees is measured:
 * the webhooks missing or received twice, and the longest pause between two deliveries.
 */
import { channelOf } from "../../shared/messaging/events";
import { api } from "./http";
import { createApiWorld, type ApiWorld } from "./api-fixtures";
import { startCluster, type Cluster } from "./cluster";
import { NatsCluster } from "./nats-cluster";
import { OrderFlow, type OrderFlowOutcome } from "./order-flow";
import { startReceiver, type ReceivedWebhook, type WebhookReceiver } from "./webhook-receiver";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The events the receiver subscribes to: every order raises both. */
const SUBSCRIBED = ["sales_order_created", "sales_order_validated"] as const;

export interface ClusterDrill {
  nats: NatsCluster;
  cluster: Cluster;
  world: ApiWorld;
  receiver: WebhookReceiver;
  stop(): Promise<void>;
}

export async function startClusterDrill(env: Record<string, string> = {}): Promise<ClusterDrill> {
  const nats = await NatsCluster.start(3);
  let cluster: Cluster | undefined;
  let receiver: WebhookReceiver | undefined;
  const stop = async () => {
    await cluster?.stop();
    await receiver?.close();
    await nats.dispose();
  };
  try {
    cluster = await startCluster({ natsUrl: nats.url, env: { WEBHOOK_DISPATCH_INTERVAL_MS: "100", ...env } });
    if (!cluster.distributed) throw new Error("The NATS cluster drill needs PostgreSQL: set TEST_DATABASE_URL.");
    const world = await createApiWorld(api(cluster.baseUrl).as(cluster.adminKey));
    receiver = await startReceiver();
    for (const event of SUBSCRIBED) {
      const subscribed = await fetch(`${cluster.baseUrl}/api/v1/webhooks`, {
        method: "PUT",
        headers: { authorization: `Bearer ${world.partnerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ event, url: `${receiver.url}/${event}` }),
      });
      if (subscribed.status !== 201)
        throw new Error(`subscribing the receiver answered ${subscribed.status}: ${await subscribed.text()}`);
    }
    return { nats, cluster, world, receiver, stop };
  } catch (err) {
    // A nats-server or a process left running kept the whole test run from exiting.
    await stop().catch(() => undefined);
    throw err;
  }
}

/** Whether a stream carries the events the receiver is subscribed to (its name ends with their channel's). */
const carriesSubscribed = (stream: string) =>
  SUBSCRIBED.some((event) => stream.endsWith(`_${channelOf(event).split(".").join("_")}`));

/**
 * The node to kill: the one leading the most of the streams the receiver's events go through,
 * then of all the project's streams; and the streams it leads.
 */
export async function streamsLeader(nats: NatsCluster): Promise<{ node: string; streams: string[] }> {
  const byLeader = new Map<string, string[]>();
  for (const s of await nats.streams()) {
    const leader = s.cluster?.leader;
    if (leader) byLeader.set(leader, [...(byLeader.get(leader) ?? []), s.config.name]);
  }
  const weight = (streams: string[]) => streams.filter(carriesSubscribed).length * 100 + streams.length;
  const [node, streams] = [...byLeader.entries()].sort((a, b) => weight(b[1]) - weight(a[1]))[0] ?? [];
  if (!node) throw new Error("no stream has a leader");
  return { node, streams };
}

/**
 * How long after `killedAt` the last of the elections the receiver's events waited for was
 * logged: their streams' leaders and their consumers' (null when none was needed).
 */
function electionMs(nats: NatsCluster, killedAt: number, restartedAt: number): number | null {
  const needed = nats
    .elections()
    .filter((e) => e.at >= killedAt && e.at < restartedAt && carriesSubscribed(e.of.split(" > ")[0]));
  return needed.length === 0 ? null : Math.max(...needed.map((e) => e.at)) - killedAt;
}

export interface DrillTiming {
  perSecond: number;
  /** Load before the kill, how long the node stays down, load after it is back. */
  beforeMs: number;
  downMs: number;
  afterMs: number;
  /** How long the deliveries may take to arrive once the load has stopped. */
  deliveryTimeoutMs: number;
}

export interface LeaderKillResult {
  killed: string;
  ledStreams: string[];
  /**
   * Kill → the last leader election the subscribed events' streams and consumers needed, as the
   * nodes logged it (null: none was needed, or none happened while the node was down).
   */
  electionMs: number | null;
  orders: OrderFlowOutcome;
  /** "<event> <externalId>" expected and not received. */
  missing: string[];
  /** "<event> <externalId>" received more than once. */
  duplicates: string[];
  /** The longest pause between two deliveries of one event while orders kept coming. */
  gapMs: number;
  line: string;
}

/** Runs the drill once; `run` tells this run's orders apart from another's. */
export async function leaderKillDrill(d: ClusterDrill, run: string, t: DrillTiming): Promise<LeaderKillResult> {
  const { node: killed, streams: ledStreams } = await streamsLeader(d.nats);
  const victim = d.nats.node(killed);
  const flow = new OrderFlow(d.cluster.baseUrl, d.world, t.perSecond, run);
  flow.start();
  const loadStartedAt = Date.now();
  await sleep(t.beforeMs);
  const killedAt = Date.now();
  await victim.stop("SIGKILL");
  await sleep(t.downMs);
  const elected = electionMs(d.nats, killedAt, Date.now());
  await victim.start();
  await sleep(t.afterMs);
  const loadStoppedAt = Date.now();
  const orders = await flow.stop();

  const expected = SUBSCRIBED.flatMap((event) =>
    (event === "sales_order_created" ? orders.created : orders.validated).map((id) => `${event} ${id}`),
  );
  const ofRun = () => d.receiver.received.filter((r) => externalIdOf(r)?.startsWith(`${run}-`));
  const missingNow = () => {
    const got = new Set(ofRun().map(deliveryKey));
    return expected.filter((k) => !got.has(k));
  };
  await d.receiver.waitFor(() => missingNow().length === 0, t.deliveryTimeoutMs).catch(() => undefined);

  const received = ofRun();
  const counts = new Map<string, number>();
  for (const r of received) counts.set(deliveryKey(r), (counts.get(deliveryKey(r)) ?? 0) + 1);
  const result = {
    killed,
    ledStreams,
    electionMs: elected,
    orders,
    missing: missingNow(),
    duplicates: [...counts].filter(([, n]) => n > 1).map(([k]) => k),
    // Per event: each goes through its own stream, whose leader may or may not have been killed.
    gapMs: Math.max(
      ...SUBSCRIBED.map((event) =>
        longestGap(
          received.filter((r) => r.headers["x-webhook-event"] === event).map((r) => r.receivedAt),
          loadStartedAt,
          loadStoppedAt,
        ),
      ),
    ),
    line: "",
  };
  result.line = describeDrill(result);
  return result;
}

function externalIdOf(r: ReceivedWebhook): string | undefined {
  return (JSON.parse(r.body) as { externalId?: string }).externalId;
}

const deliveryKey = (r: ReceivedWebhook) => `${r.headers["x-webhook-event"]} ${externalIdOf(r)}`;

/**
 * The longest pause between two deliveries that began while orders kept coming (from `from` to
 * `to`): a pause that starts then and ends later counts whole; a straggler after the backlog
 * has drained does not.
 */
function longestGap(times: number[], from: number, to: number): number {
  const sorted = [...times, from].sort((a, b) => a - b);
  let longest = 0;
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i - 1] >= from && sorted[i - 1] < to) longest = Math.max(longest, sorted[i] - sorted[i - 1]);
  return longest;
}

function describeDrill(r: Omit<LeaderKillResult, "line">): string {
  const failures =
    Object.entries(r.orders.failures)
      .map(([k, n]) => `${k}: ${n}`)
      .join(", ") || "none";
  return (
    `[nats-cluster] killed ${r.killed}, leader of ${r.ledStreams.join(", ")}: ` +
    `streams and consumers of the subscribed events led again after ${r.electionMs === null ? "– (no election)" : `${r.electionMs} ms`}; ` +
    `orders created ${r.orders.created.length}, validated ${r.orders.validated.length}, failed requests ${failures}; ` +
    `webhooks missing ${r.missing.length}, twice ${r.duplicates.length}; longest pause between deliveries of one event ${r.gapMs} ms`
  );
}
