/**
 * `npm run bench:delivery-writes` (issue 23): what each webhook delivery writes and reads in
 * PostgreSQL, table by table, and how many transactions it costs. Counts, not timings: they do
 * not depend on the machine's load. The distributed mode (two webhooks processes) on a fresh
 * database, a receiver answering 200 at once on 10 origins:
 *
 *  intake     N orders validated with no subscription at all: what a validation costs without
 *             any delivery (the orders service, its outbox, the relay; the webhooks process
 *             settles an event nobody hears without a statement)
 *  idle       10 s of nothing: the polling loops' own transactions (their rate at rest; under
 *             load a dispatcher claims when its slots free up rather than on its interval)
 *  deliveries N more orders validated with 10 subscriptions — as fast as the connections go, or
 *             paced at --rate validations/s (open loop) — : 10 N deliveries, every first
 *             attempt a success; the processes are stopped once the last arrives (their
 *             outcomes are written as they stop), so every backend's counts are flushed
 *
 * and prints, per delivery: the deliveries window, and the delivery path alone (less a tenth of
 * a validation's intake and the idle polling of the window's length).
 *
 *   node dist/bench/delivery-writes.bench.js [--orders 1000] [--subscriptions 10] [--connections 20]
 *     [--rate N] [--webhooks-processes 2] [--postgres URL] [--nats URL]
 *
 * A burst outruns the dispatchers: most deliveries wait in the table and are claimed. Paced below
 * their capacity, a fresh event's deliveries are stored claimed and sent at once (direct hand-off).
 *
 * Prints its tables; bench/README.md records them by hand.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { LOOPBACK, positiveInteger, serverUrls, UsageError } from "./options";
import { stopAll } from "./processes";
import { activityTable, combine, growth, IDLE_FLUSH_MS, readActivity, type ActivityReading } from "./table-activity";
import { deployDistributed, newRunId, type DistributedDeployment, type DistributedRun } from "./targets";
import { WebhookSink } from "./webhook-sink-client";
import { createBackOffice, createOrders, subscribeReceiver, validateAll, validatePaced } from "./webhooks-load";

const log = (line: string) => console.log(`[bench:delivery-writes] ${line}`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
/** Validations, with their deliveries, before anything is counted: every service found, the receiver reached. */
const WARMUP_ORDERS = 20;
/** A delivery that failed is retried after 5 s and some: longer than this without one arriving means some are lost. */
const IDLE_TIMEOUT_MS = 30_000;

/**
 * Waits until `expected` deliveries arrived, counted as distinct (webhook-id, path) pairs: one
 * webhook-id is shared by an event's deliveries to every subscription. Resolves to how many
 * arrived; gives up once nothing new came for IDLE_TIMEOUT_MS.
 */
async function waitForDeliveries(sink: WebhookSink, expected: number): Promise<number> {
  let last = -1;
  let lastProgress = Date.now();
  for (;;) {
    const { requests } = await sink.count();
    if (requests >= expected || Date.now() - lastProgress > IDLE_TIMEOUT_MS)
      return new Set((await sink.records()).map((r) => `${r.webhookId} ${r.path}`)).size;
    if (requests !== last) [last, lastProgress] = [requests, Date.now()];
    await sleep(100);
  }
}

/** The idle window's length, besides the flush wait after it. */
const IDLE_MS = 10_000;

interface Window {
  grown: ActivityReading;
  /** How long the work took. */
  ms: number;
  /** From one reading to the other (the work and the flush): how long the polling loops counted. */
  spanMs: number;
}

/** The counters' growth over `work`, read once every backend had time to flush (or `flush` made them). */
async function measure(
  databaseUrl: string,
  work: () => Promise<void>,
  flush: () => Promise<void> = () => sleep(IDLE_FLUSH_MS),
): Promise<Window> {
  const before = await readActivity(databaseUrl);
  const started = Date.now();
  await work();
  const ms = Date.now() - started;
  await flush();
  const after = await readActivity(databaseUrl);
  return { grown: growth(before, after), ms, spanMs: Date.now() - started };
}

/** Stops the gateway first (it drains the requests in flight), then the rest: each flushes its outcomes and its counts. */
async function stopServices(deployment: DistributedDeployment): Promise<void> {
  await stopAll(deployment.processes.filter((p) => p.name === "gateway"));
  await stopAll(deployment.processes);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      orders: { type: "string", default: "1000" },
      subscriptions: { type: "string", default: "10" },
      connections: { type: "string", default: "20" },
      rate: { type: "string" },
      "webhooks-processes": { type: "string", default: "2" },
      postgres: { type: "string", default: `postgres://postgres@${LOOPBACK}:5432/postgres` },
      nats: { type: "string", default: `nats://${LOOPBACK}:4222` },
    },
    strict: true,
  });
  const orders = positiveInteger("orders", values.orders, 1);
  const subscriptions = positiveInteger("subscriptions", values.subscriptions, 1);
  const connections = positiveInteger("connections", values.connections, 1);
  const rate = values.rate === undefined ? null : positiveInteger("rate", values.rate, 1);
  const webhooksProcesses = positiveInteger("webhooks-processes", values["webhooks-processes"], 1);
  const run: DistributedRun = {
    runId: newRunId(new Date().toISOString()),
    nodeArgs: [],
    options: serverUrls(values),
  };
  log(`load average ${loadAverage()}; deploying the distributed mode (${webhooksProcesses} webhooks processes)`);
  const sink = await WebhookSink.start(subscriptions);
  let deployment: DistributedDeployment | undefined;
  try {
    deployment = await deployDistributed(run, {
      bench: "writes",
      replicas: { webhooks: webhooksProcesses },
      environment: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true" },
    });
    const d = deployment;
    if (!d.databaseName) throw new Error("the distributed deployment has no database of its own");
    const databaseUrl = Object.assign(new URL(run.options.postgresUrl), { pathname: `/${d.databaseName}` }).toString();
    const office = await createBackOffice(d.baseUrl, d.adminKey);
    log(`creating ${2 * orders + WARMUP_ORDERS} orders (not counted)`);
    const ids = await createOrders(d.baseUrl, d.partner, 2 * orders + WARMUP_ORDERS, 20, `writes-bench-${run.runId}`);
    const [intakeIds, deliveryIds, warmupIds] = [
      ids.slice(0, orders),
      ids.slice(orders, 2 * orders),
      ids.slice(2 * orders),
    ];
    const validate = async (orderIds: number[], perSecond: number | null = null) => {
      const answers = await (perSecond === null
        ? validateAll(d.baseUrl, office, orderIds, connections)
        : validatePaced(d.baseUrl, office, orderIds, perSecond));
      const failed = answers.filter((a) => a.code === null);
      if (failed.length > 0)
        throw new Error(`${failed.length} validations failed, e.g. ${failed[0].status} ${failed[0].body}`);
    };
    await sleep(IDLE_FLUSH_MS);

    log(`intake: ${orders} validations, no subscription`);
    const intake = await measure(databaseUrl, () => validate(intakeIds));
    log(`idle: ${IDLE_MS / 1000} s`);
    const idle = await measure(databaseUrl, () => sleep(IDLE_MS));

    const paths = await subscribeReceiver(d.baseUrl, office, sink.urls, subscriptions);
    log(`warm-up: ${warmupIds.length} validations with ${subscriptions} subscriptions (not counted)`);
    await validate(warmupIds);
    const warmed = await waitForDeliveries(sink, warmupIds.length * paths.length);
    if (warmed < warmupIds.length * paths.length)
      throw new Error(`warm-up: ${warmed} of ${warmupIds.length * paths.length} deliveries arrived`);
    await sink.clear();
    await sleep(IDLE_FLUSH_MS);

    const expected = orders * paths.length;
    log(`deliveries: ${orders} validations${rate === null ? "" : ` at ${rate}/s`}, ${expected} deliveries`);
    let received = 0;
    const deliveries = await measure(
      databaseUrl,
      async () => {
        await validate(deliveryIds, rate);
        received = await waitForDeliveries(sink, expected);
        if (received < expected) throw new Error(`only ${received} of ${expected} deliveries arrived`);
      },
      () => stopServices(d),
    );
    const perDelivery = combine([[deliveries.grown, 1 / received]]);
    // The polling loops' share of a window, at the idle window's rate.
    const idleShare = (w: Window) => w.spanMs / Math.max(1, idle.spanMs);
    const intakeAlone = combine([
      [intake.grown, 1 / orders],
      [idle.grown, -idleShare(intake) / orders],
    ]);
    const path = combine([
      [deliveries.grown, 1 / received],
      [idle.grown, -idleShare(deliveries) / received],
      [intakeAlone, -1 / paths.length],
    ]);
    console.log(
      [
        "",
        `load average ${loadAverage()}; ${orders} validations${rate === null ? ` over ${connections} connections` : ` at ${rate}/s`} × ${paths.length} subscriptions = ${received} deliveries received in ${deliveries.ms} ms (${deliveries.spanMs} ms counted); intake ${intake.ms} ms (${intake.spanMs} ms counted); idle ${idle.spanMs} ms counted`,
        "",
        "Intake, per validation (no subscription; less the idle polling):",
        "",
        activityTable(intakeAlone, "validation"),
        "",
        "Idle polling, per second:",
        "",
        activityTable(combine([[idle.grown, 1000 / Math.max(1, idle.spanMs)]]), "second idle"),
        "",
        "Deliveries window, per delivery (its validation's intake and the idle polling included):",
        "",
        activityTable(perDelivery, "delivery"),
        "",
        `The delivery path alone, per delivery (less 1/${paths.length} of a validation's intake and the idle polling of the window's length):`,
        "",
        activityTable(path, "delivery"),
        "",
      ].join("\n"),
    );
  } catch (err) {
    for (const p of [...(deployment?.processes ?? []), sink.process].filter((p) => p.linesWritten > 0))
      console.error(`--- last lines of ${p.name} ---\n${p.output()}`);
    throw err;
  } finally {
    await deployment?.tearDown();
    await sink.stop();
  }
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
