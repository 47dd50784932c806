/**
 * `npm run bench:soak` (issue 23): does anything drift when the service runs for a while? The
 * distributed mode with two webhooks processes, 10 subscriptions of a back office to
 * `sales_order_validated` on 10 receiver origins, the last of which answers 500 to 20 % of the
 * attempts. In one run:
 *
 *  probe   the capacity, briefly: orders alone (autocannon, as bench:orders), then validations
 *          alone (a burst, as bench:webhooks) — orders/s and deliveries/s
 *  soak    for --minutes, orders offered at a steady rate (open loop), each created then
 *          validated (10 deliveries), at half the capacity of that mixed work (below)
 *  drain   the last retries: at the end every accepted order's deliveries must have arrived
 *
 * Per --window minutes: p50/p99 of intake and of event-to-receipt, errors, each process's RSS
 * (and its slope over the run), PostgreSQL's tables and indexes with their dead rows and
 * autovacuum runs, and the JetStream streams. It removes what it creates (the database, the
 * namespace's streams) and writes bench/results/soak-<time>.json; the README section is pasted.
 *
 *   node dist/bench/soak.bench.js [--minutes 20] [--window 5] [--probe-seconds 10]
 *     [--subscriptions 10] [--failing-percent 20] [--retention 10m] [--postgres URL] [--nats URL] [--no-write]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { codeVersion, describeMachine } from "./environment";
import { postOrders } from "./load";
import { benchNamespace, deleteNamespaceStreams, namespaceStreamSizes } from "./nats-namespace";
import { LOOPBACK, positiveInteger, serverUrls, UsageError } from "./options";
import { DURATION_PATTERN } from "../shared/config/variables";
import { orderPayload } from "./order-payload";
import { ROOT, stopAll } from "./processes";
import type { BenchProcess } from "./processes";
import {
  benchDatabaseName,
  deployDistributed,
  distributedDatabaseSuffix,
  newRunId,
  type DistributedDeployment,
  type DistributedRun,
} from "./targets";
import { dropDatabase } from "./databases";
import { WebhookSink } from "./webhook-sink-client";
import { deliveryFigures, percentiles } from "./webhooks-figures";
import {
  createBackOffice,
  createOrders,
  subscribeReceiver,
  targetPath,
  validateAll,
  type ApiClient,
} from "./webhooks-load";
import { Receipts, slopeMBPerHour, soakTables, type Journey, type TableSize, type WindowFigures } from "./soak-figures";
import { ProcessMetrics } from "./process-metrics";
import { ServerIoWindows } from "./database-activity";

const BENCH = "soak";
/** Retries of the flaky receiver's deliveries come within minutes, not the default hours: the run must end. */
const RETRY_SCHEDULE = "1,2,4,8,16,30,60,60,60,60";
const PROBE_CONNECTIONS = 20;
const PROBE_VALIDATIONS = 300;
const SAMPLE_RSS_MS = 10_000;
/** Journeys under way at most: beyond it the service is not keeping up, and offering more measures nothing. */
const MAX_IN_FLIGHT = 1_000;
/** The drain gives up once no receipt arrived for this long (the last retry waits 60 s + jitter). */
const DRAIN_IDLE_MS = 90_000;

const log = (line: string) => console.log(`[bench:soak] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface SoakOptions {
  minutes: number;
  windowMinutes: number;
  probeSeconds: number;
  subscriptions: number;
  failingPercent: number;
  /**
   * WEBHOOK_RETENTION and OUTBOX_RETENTION of the run (pruning every minute), so that a soak of
   * an hour reaches the steady state a production database keeps; null: the services' defaults
   * (30 days: the database only grows).
   */
  retention: string | null;
  postgresUrl: string;
  natsUrl: string;
  write: boolean;
}

function parseSoakOptions(argv: string[]): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: "string", default: "20" },
      window: { type: "string", default: "5" },
      "probe-seconds": { type: "string", default: "10" },
      subscriptions: { type: "string", default: "10" },
      "failing-percent": { type: "string", default: "20" },
      retention: { type: "string" },
      postgres: { type: "string", default: `postgres://postgres@${LOOPBACK}:5432/postgres` },
      nats: { type: "string", default: `nats://${LOOPBACK}:4222` },
      "no-write": { type: "boolean", default: false },
    },
    strict: true,
  });
  return {
    minutes: positiveInteger("minutes", values.minutes, 1),
    windowMinutes: positiveInteger("window", values.window, 1),
    probeSeconds: positiveInteger("probe-seconds", values["probe-seconds"], 1),
    subscriptions: positiveInteger("subscriptions", values.subscriptions, 2),
    failingPercent: positiveInteger("failing-percent", values["failing-percent"], 0),
    retention: retentionOption(values.retention),
    ...serverUrls(values),
    write: !values["no-write"],
  };
}

function retentionOption(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (!DURATION_PATTERN.test(value)) throw new UsageError(`--retention takes a duration such as 10m, not "${value}"`);
  return value;
}

/** The services' retention settings for the run's processes: pruning every minute. */
function retentionEnvironment(retention: string | null): Record<string, string> {
  return retention === null
    ? {}
    : { WEBHOOK_RETENTION: retention, OUTBOX_RETENTION: retention, RETENTION_INTERVAL: "1m" };
}

function rssMB(p: BenchProcess): number | null {
  try {
    const kib = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${p.pid}/status`, "utf8"))?.[1];
    return kib ? Math.round((Number(kib) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** Every table of the run's database: size with indexes, live and dead rows, autovacuum runs. */
async function tableSizes(serverUrl: string, database: string): Promise<TableSize[]> {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.href });
  await client.connect();
  try {
    const { rows } = await client.query<{
      t: string;
      total: string;
      idx: string;
      live: string;
      dead: string;
      av: string;
    }>(
      `SELECT schemaname || '.' || relname AS t, pg_total_relation_size(relid) AS total, pg_indexes_size(relid) AS idx,
              n_live_tup AS live, n_dead_tup AS dead, autovacuum_count AS av
         FROM pg_stat_user_tables`,
    );
    const mb = (n: string) => Math.round((Number(n) / 1024 / 1024) * 100) / 100;
    return rows.map((r) => ({
      table: r.t,
      totalMB: mb(r.total),
      indexesMB: mb(r.idx),
      liveRows: Number(r.live),
      deadRows: Number(r.dead),
      autovacuums: Number(r.av),
    }));
  } finally {
    await client.end();
  }
}

/** Whether the server vacuums on its own: dead rows piling up mean nothing when it does not. */
async function autovacuumSetting(serverUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ autovacuum: string }>("SHOW autovacuum");
    return rows[0]?.autovacuum ?? "unknown";
  } finally {
    await client.end();
  }
}

/** Orders/s of the intake alone, then deliveries/s of validations alone: the probe. */
async function probeCapacity(deployment: DistributedDeployment, sink: WebhookSink, office: ApiClient, o: SoakOptions) {
  log(`probe: orders alone, ${o.probeSeconds} s at ${PROBE_CONNECTIONS} connections (after as long a warm-up)`);
  await postOrders(deployment.baseUrl, deployment.partner, PROBE_CONNECTIONS, o.probeSeconds);
  const orders = await postOrders(deployment.baseUrl, deployment.partner, PROBE_CONNECTIONS, o.probeSeconds);
  log(`probe: validations alone, ${PROBE_VALIDATIONS} at once (${PROBE_VALIDATIONS * o.subscriptions} deliveries)`);
  const ids = await createOrders(
    deployment.baseUrl,
    deployment.partner,
    PROBE_VALIDATIONS,
    PROBE_CONNECTIONS,
    `soak-probe`,
  );
  await sink.clear();
  const answers = await validateAll(deployment.baseUrl, office, ids, 50);
  const codes = answers.flatMap((a) => (a.code ? [a.code] : []));
  const paths = Array.from({ length: o.subscriptions }, (_, i) => targetPath(i + 1));
  await sink.waitForDistinct(codes.length * paths.length, 30_000);
  const deliveries = deliveryFigures(new Map(codes.map((c) => [c, null])), paths, await sink.records());
  await sink.clear();
  return { ordersPerSecond: orders.requestsPerSecond.mean, deliveriesPerSecond: deliveries.perSecond };
}

/** One order's journey: created by the partner, then validated by the back office. */
async function journey(
  deployment: DistributedDeployment,
  office: ApiClient,
  n: number,
  runId: string,
): Promise<Journey> {
  const sentAt = Date.now();
  const j: Journey = { sentAt, intakeStatus: 0, intakeMs: 0, code: null, validateStatus: null, validatedAt: null };
  try {
    const created = await fetch(`${deployment.baseUrl}/api/v1/orders`, {
      method: "POST",
      headers: { Authorization: `Bearer ${deployment.partner.apiKey}`, "Content-Type": "application/json" },
      body: orderPayload(deployment.partner.references, `soak-${runId}-${n}`),
    });
    const order = (await created.json()) as { id?: number };
    j.intakeStatus = created.status;
    j.intakeMs = Date.now() - sentAt;
    if (created.status !== 201 || !order.id) return j;
    const validated = await fetch(`${deployment.baseUrl}/api/v1/orders/${order.id}/validate`, {
      method: "POST",
      headers: { Authorization: `Bearer ${office.apiKey}` },
    });
    const body = (await validated.json()) as { code?: string };
    j.validateStatus = validated.status;
    j.validatedAt = Date.now();
    if (validated.ok && body.code) j.code = body.code;
  } catch {
    j.intakeMs ||= Date.now() - sentAt;
  }
  return j;
}

interface SoakResults {
  benchmark: "soak";
  startedAt: string;
  finishedAt: string;
  code: ReturnType<typeof codeVersion>;
  machine: Awaited<ReturnType<typeof describeMachine>>;
  settings: SoakOptions & { retrySchedule: string; autovacuum: string };
  loadAverage: { start: string; end: string };
  probe?: { ordersPerSecond: number; deliveriesPerSecond: number; offeredOrdersPerSecond: number };
  windows: WindowFigures[];
  rssSlopeMBPerHour: Record<string, number>;
  end?: {
    accepted: number;
    expectedDeliveries: number;
    lost: number;
    lostExamples: string[];
    duplicates: number;
    notOffered: number;
  };
  warnings: Record<string, number>;
  error?: string;
}

async function soak(run: DistributedRun, o: SoakOptions, results: SoakResults): Promise<void> {
  const sink = await WebhookSink.start(o.subscriptions);
  const deployment = await deployDistributed(run, {
    bench: BENCH,
    replicas: { webhooks: 2 },
    environment: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
      ...retentionEnvironment(o.retention),
    },
  });
  const processes = [...deployment.processes];
  const rssSamples = new Map<string, [number, number][]>(processes.map((p) => [p.name, []]));
  const spent = new ProcessMetrics(
    new Map(processes.flatMap((p) => (p.metricsUrl ? [[p.name, p.metricsUrl] as [string, string]] : []))),
  );
  // Cleared however the soak ends: left running after a failure, it kept the process alive.
  let rssTimer: NodeJS.Timeout | undefined;
  try {
    const office = await createBackOffice(deployment.baseUrl, deployment.adminKey);
    const paths = await subscribeReceiver(deployment.baseUrl, office, sink.urls, o.subscriptions);
    const failingPath = paths[paths.length - 1];
    const probe = await probeCapacity(deployment, sink, office, o);
    // An order here costs an intake and a validation's deliveries: the time of both shares the machine.
    const mixedPerSecond = 1 / (1 / probe.ordersPerSecond + o.subscriptions / probe.deliveriesPerSecond);
    const rate = Math.max(1, Math.round((mixedPerSecond / 2) * 10) / 10);
    results.probe = { ...probe, offeredOrdersPerSecond: rate };
    log(
      `probe: ${probe.ordersPerSecond} orders/s, ${probe.deliveriesPerSecond} deliveries/s: offering ${rate} orders/s`,
    );
    await sink.fail(paths.length - 1, o.failingPercent);

    const journeys: Journey[] = [];
    const validatedAt = new Map<string, number>();
    const receipts = new Receipts();
    const under = new Set<Promise<void>>();
    let notOffered = 0;
    // What the processes spent before the soak (start, probe) is not the first window's.
    await spent.take();
    const serverIo = deployment.databaseName ? new ServerIoWindows(o.postgresUrl, deployment.databaseName) : null;
    await serverIo?.take();
    const start = Date.now();
    const windowMs = o.windowMinutes * 60_000;
    const endAt = start + o.minutes * 60_000;
    const sampleRss = () => {
      for (const p of processes) {
        const mb = rssMB(p);
        if (mb !== null) rssSamples.get(p.name)?.push([Date.now() - start, mb]);
      }
    };
    rssTimer = setInterval(sampleRss, SAMPLE_RSS_MS);
    sampleRss();
    // The latencies of the receipts taken since the last window closed.
    let latencies = { all: [] as number[], healthy: [] as number[] };
    const takeReceipts = async () => {
      const taken = receipts.add(await sink.take(), validatedAt, failingPath);
      // Appended one by one: a window's receipts (150,000 at 500 a second) are more arguments
      // than a spread into push may pass (RangeError: Maximum call stack size exceeded).
      for (const ms of taken.all) latencies.all.push(ms);
      for (const ms of taken.healthy) latencies.healthy.push(ms);
    };

    const closeWindow = async (w: number, from: number, to: number) => {
      const sent = journeys.filter((j) => j.sentAt >= from && j.sentAt < to);
      await takeReceipts();
      const { all, healthy } = latencies;
      latencies = { all: [], healthy: [] };
      const figures: WindowFigures = {
        window: w,
        endsAtMinute: Math.round(((to - start) / 60_000) * 10) / 10,
        offered: sent.length,
        intakeMs: percentiles(sent.map((j) => j.intakeMs)),
        errors: sent.filter((j) => j.intakeStatus !== 201 || (j.validateStatus !== null && j.code === null)).length,
        receipts: all.length,
        eventToReceiptMs: percentiles(all),
        healthyEventToReceiptMs: percentiles(healthy),
        rssMB: Object.fromEntries(processes.map((p) => [p.name, rssMB(p) ?? 0])),
        processes: await spent.take(),
        serverIo: (await serverIo?.take()) ?? null,
        tables: deployment.databaseName ? await tableSizes(o.postgresUrl, deployment.databaseName) : [],
        streams: await namespaceStreamSizes(o.natsUrl, deployment.namespace),
      };
      results.windows.push(figures);
      log(
        `window ${w}: ${figures.offered} orders, intake p99 ${figures.intakeMs.p99} ms, errors ${figures.errors}, ${figures.receipts} receipts, event-to-receipt p50 ${figures.eventToReceiptMs.p50} / p99 ${figures.eventToReceiptMs.p99} ms, RSS ${JSON.stringify(figures.rssMB)}`,
      );
    };

    log(
      `soak: ${o.minutes} min at ${rate} orders/s (each validated: ${rate * o.subscriptions} deliveries/s), windows of ${o.windowMinutes} min`,
    );
    let windowStart = start;
    let w = 1;
    for (let n = 0; ; n++) {
      const due = start + (n * 1000) / rate;
      if (due >= endAt) break;
      while (Date.now() >= windowStart + windowMs) {
        await closeWindow(w++, windowStart, windowStart + windowMs);
        windowStart += windowMs;
      }
      const wait = due - Date.now();
      if (wait > 1) await sleep(wait);
      if (under.size >= MAX_IN_FLIGHT) {
        notOffered++;
        continue;
      }
      const going: Promise<void> = journey(deployment, office, n, run.runId).then((j) => {
        journeys.push(j);
        if (j.code && j.validatedAt) validatedAt.set(j.code, j.validatedAt);
        under.delete(going);
      });
      under.add(going);
    }
    await Promise.all(under);
    log("drain: waiting for the last deliveries (and their retries)");
    const codes = journeys.flatMap((j) => (j.code ? [j.code] : []));
    let lastProgress = Date.now();
    let missing = receipts.missing(codes, paths);
    while (missing.length > 0 && Date.now() - lastProgress < DRAIN_IDLE_MS) {
      await sleep(2_000);
      const before = missing.length;
      await takeReceipts();
      missing = receipts.missing(codes, paths);
      if (missing.length < before) lastProgress = Date.now();
    }
    await closeWindow(w, windowStart, Date.now());
    clearInterval(rssTimer);
    sampleRss();
    // After the first window: the start (code loaded, pools and JIT warming) is not a drift.
    const steadyFrom = Math.min(windowMs, (Date.now() - start) / 2);
    results.rssSlopeMBPerHour = Object.fromEntries(
      [...rssSamples].map(([name, s]) => [name, slopeMBPerHour(s.filter(([t]) => t >= steadyFrom))]),
    );
    results.end = {
      accepted: codes.length,
      expectedDeliveries: codes.length * paths.length,
      lost: missing.length,
      lostExamples: missing.slice(0, 5),
      duplicates: receipts.duplicates,
      notOffered,
    };
  } finally {
    clearInterval(rssTimer);
    await deployment.tearDown();
    await sink.stop();
    // LOG_LEVEL=warn: whatever a process printed is worth a look.
    for (const p of processes.filter((p) => p.linesWritten > 0)) {
      results.warnings[p.name] = p.linesWritten;
      console.error(`--- last lines of ${p.name} ---\n${p.output()}`);
    }
  }
}

/** The issue's drift criterion: the last window's p99 against the first's. */
function drift(windows: WindowFigures[]): string {
  // The last window is a full one too: it closes once the drain is over.
  const [first, last] = [windows[0], windows[windows.length - 1]];
  if (!first || !last || last === first) return "";
  const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 100) / 100 : "–");
  return `p99, window ${last.window} ÷ window 1: intake ${ratio(last.intakeMs.p99, first.intakeMs.p99)}, event-to-receipt ${ratio(last.eventToReceiptMs.p99, first.eventToReceiptMs.p99)} (healthy receivers ${ratio(last.healthyEventToReceiptMs.p99, first.healthyEventToReceiptMs.p99)}); RSS slopes are fitted on the samples after the first window.`;
}

function report(results: SoakResults): string {
  const e = results.end;
  return [
    `Soak of ${results.startedAt} (code at \`${results.code.commit}\`), ${results.settings.minutes} min in windows of ${results.settings.windowMinutes} min; load average ${results.loadAverage.start} at the start, ${results.loadAverage.end} at the end.`,
    results.probe
      ? `Probe: ${results.probe.ordersPerSecond} orders/s alone, ${results.probe.deliveriesPerSecond} deliveries/s alone; offered ${results.probe.offeredOrdersPerSecond} orders/s, each validated (${results.settings.subscriptions} deliveries; one receiver fails ${results.settings.failingPercent} % of attempts, retries after ${RETRY_SCHEDULE} s). PostgreSQL's autovacuum: ${results.settings.autovacuum}. Retention: ${results.settings.retention === null ? "the services' defaults (30 d)" : `${results.settings.retention} (webhooks and outboxes, pruned every minute)`}.`
      : "",
    soakTables(results.windows, results.rssSlopeMBPerHour),
    drift(results.windows),
    e
      ? `End: ${e.accepted} orders accepted and validated, ${e.expectedDeliveries} deliveries expected, **${e.lost} lost**${e.lost ? ` (e.g. ${e.lostExamples.join(", ")})` : ""}, ${e.duplicates} duplicates (allowed), ${e.notOffered} not offered (more than ${MAX_IN_FLIGHT} under way).`
      : "",
    Object.keys(results.warnings).length ? `Lines at warn or above: ${JSON.stringify(results.warnings)}.` : "",
    results.error ? `Failed: ${results.error}` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
}

async function main(): Promise<void> {
  const options = parseSoakOptions(process.argv.slice(2));
  const startedAt = new Date().toISOString();
  const run: DistributedRun = {
    runId: newRunId(startedAt),
    nodeArgs: [],
    options: { postgresUrl: options.postgresUrl, natsUrl: options.natsUrl },
  };
  process.once("SIGINT", () => {
    log("interrupted: stopping every process started, deleting the run's streams and database");
    void stopAll()
      .then(() => deleteNamespaceStreams(options.natsUrl, benchNamespace(run.runId, BENCH)))
      .then(() => dropDatabase(options.postgresUrl, benchDatabaseName(run.runId, distributedDatabaseSuffix(BENCH))))
      .finally(() => process.exit(130));
  });
  const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const results: SoakResults = {
    benchmark: "soak",
    startedAt,
    finishedAt: "",
    code: codeVersion(),
    machine: await describeMachine({ postgresUrl: options.postgresUrl, natsUrl: options.natsUrl }),
    settings: { ...options, retrySchedule: RETRY_SCHEDULE, autovacuum: await autovacuumSetting(options.postgresUrl) },
    loadAverage: { start: loadAverage(), end: "" },
    windows: [],
    rssSlopeMBPerHour: {},
    warnings: {},
  };
  try {
    await soak(run, options, results);
  } catch (err) {
    results.error = err instanceof Error ? err.message : String(err);
    process.exitCode = 1;
  }
  results.finishedAt = new Date().toISOString();
  results.loadAverage.end = loadAverage();
  console.log(`\n${report(results)}\n`);
  if (options.write) {
    const folder = path.join(ROOT, "bench/results");
    mkdirSync(folder, { recursive: true });
    const file = path.join(folder, `soak-${startedAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    log(`results written to ${path.relative(ROOT, file)}`);
  }
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
