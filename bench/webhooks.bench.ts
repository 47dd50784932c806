/**
 * `npm run bench:webhooks`: webhook delivery in the distributed mode, with two webhooks
 * processes, to a local receiver that answers 200 at once on 10 ports (10 origins, one per
 * subscription, as 10 subscribers would be). In one run:
 *
 *  warm-up   4,000 validations in rounds of 500 (unmeasured; each round's CPU per delivery
 *            logged), then VACUUM ANALYZE: the phases measure optimised code, as a service
 *            that has run for a while is
 *  burst     2,000 orders (created beforehand, not timed) validated as fast as 50 connections
 *            go, with 10 subscriptions: 20,000 deliveries; deliveries/s, event-to-receipt latency
 *  unordered 400 orders changing 5 times (written to the orders outbox, webhooks-ordering.ts),
 *            the subscriptions with `ordering: none`: 20,000 deliveries
 *  per_entity the same with `ordering: per_entity`: deliveries/s against unordered's, and
 *            every (order, subscription) line in version order
 *  steady    1,000 validations paced at 200/s: the latency at that load
 *  calm      500 validations paced at 50/s, every subscriber healthy: the reference latency
 *  noisy     500 more at 50/s while one subscriber's origin accepts requests and never answers:
 *            the 9 healthy subscribers' latency against calm's, and none of theirs missing
 *  baseline  a bare loop POSTing the same bodies to the same receiver at the dispatchers'
 *            concurrency (processes × WEBHOOK_DISPATCH_BATCH in flight), warmed up as long,
 *            three times: the median run's deliveries/s
 *
 * With --preload N the database first holds N settled deliveries (webhooks-preload.ts).
 * with the peak RSS of every process and the CPU per delivery. Writes
 * bench/results/webhooks-<timestamp>.json and its section of bench/README.md.
 * Figures, not a test: nothing here fails because a figure is poor.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { config } from "../shared/config/config";
import { CpuWindow, deploymentGroups, type Measured } from "./cpu-time";
import { DatabaseWindow } from "./database-activity";
import { dropDatabase, vacuumAnalyze } from "./databases";
import { codeVersion, describeMachine } from "./environment";
import { benchNamespace, deleteNamespaceStreams } from "./nats-namespace";
import { UsageError } from "./options";
import { PeakRss, type ProcessMemory } from "./peak-rss";
import { BenchProcess, dist, stopAll } from "./processes";
import { profileReport, summarizeProfiles } from "./profile-summary";
import { workOutside } from "./report";
import {
  benchDatabaseName,
  deployDistributed,
  distributedDatabaseSuffix,
  newRunId,
  type DistributedDeployment,
  type DistributedRun,
} from "./targets";
import { WebhookSink } from "./webhook-sink-client";
import type { BaselineSenderReport } from "./webhook-baseline-client";
import { deliveryFigures, percentiles } from "./webhooks-figures";
import {
  createBackOffice,
  createOrders,
  SUBSCRIBED_EVENT,
  subscribeReceiver,
  validateAll,
  validatePaced,
  type ApiClient,
  type ValidationAnswer,
} from "./webhooks-load";
import { parseWebhooksOptions, type WebhooksBenchOptions } from "./webhooks-options";
import { EVENTS_PER_ORDER, emitOrderChanges, linesOutOfOrder, setOrdering } from "./webhooks-ordering";
import { preloadDeliveries } from "./webhooks-preload";
import {
  checkWebhookGoal,
  consoleSummary,
  cpuPerDelivery,
  sendingSideMs,
  writeWebhookResults,
  type PhaseId,
  type PhaseResult,
  type ValidationFigures,
  type WebhooksBenchResults,
} from "./webhooks-report";

const BENCH = "webhooks";
/** Orders created at once beforehand (not timed). */
const CREATE_CONCURRENCY = 20;
/** Validations in flight during the warm-up. */
const WARMUP_CONNECTIONS = 10;
/** A phase gives up waiting once no new delivery arrived for this long (the first retry comes after 5 s + jitter). */
const IDLE_TIMEOUT_MS = 30_000;
/** Between phases: the last attempts are recorded, the pools and queues are idle. */
const SETTLE_MS = 2_000;
/**
 * The warm-up's validations go in rounds of this many, each measured as a phase is: the rounds'
 * CPU per delivery shows whether V8 had settled before the burst (it falls for the first few).
 */
const WARMUP_ROUND = 500;
const BASELINE_READY_MS = 60_000;
const BASELINE_DONE_MS = 10 * 60_000;

const log = (line: string) => console.log(`[bench:webhooks] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

interface Stage {
  run: DistributedRun;
  options: WebhooksBenchOptions;
  sink: WebhookSink;
  /** Every process whose CPU profile (with --cpu-prof) is worth a summary, by pid. */
  names: Map<number, string>;
}

const PHASES: Record<PhaseId, { label: string; description: string }> = {
  burst: {
    label: "burst",
    description:
      "Orders validated as fast as the connections go; every validation makes one delivery per subscription.",
  },
  unordered: {
    label: "unordered",
    description: "Orders changing five times each (outbox rows written with SQL), every subscription `ordering: none`.",
  },
  per_entity: {
    label: "per_entity",
    description:
      "The same with every subscription `ordering: per_entity`: one order's deliveries one at a time, in version order.",
  },
  steady: { label: "steady", description: "Validations paced at a steady rate (open loop): the latency at that load." },
  calm: {
    label: "calm",
    description: "Validations paced at the noisy-neighbour rate with every subscriber healthy: the reference latency.",
  },
  noisy: {
    label: "noisy",
    description:
      "The same rate while the last subscriber's origin accepts requests and never answers: the healthy subscribers' deliveries only.",
  },
  baseline: {
    label: "baseline",
    description:
      "A bare node:http loop POSTing the burst's bodies to the same receiver paths at the dispatchers' concurrency: no database, no claim, no signing.",
  },
};

function newPhase(id: PhaseId): PhaseResult {
  return { id, ...PHASES[id], deliveries: null, cpu: [], windowMs: 0, remarks: [] };
}

function validationFigures(answers: ValidationAnswer[]): ValidationFigures {
  const statusCodes: Record<string, number> = {};
  for (const a of answers) statusCodes[a.status] = (statusCodes[a.status] ?? 0) + 1;
  // Folded, not spread into Math.max: a run's answers may outnumber the arguments a call may take.
  const first = answers.reduce((m, a) => Math.min(m, a.sentAt), Infinity);
  const last = answers.reduce((m, a) => Math.max(m, a.sentAt), -Infinity);
  const span = last - first;
  return {
    sent: answers.length,
    succeeded: answers.filter((a) => a.code !== null).length,
    statusCodes,
    sentPerSecond: span > 0 ? Math.round(((answers.length - 1) / span) * 1000 * 10) / 10 : 0,
    answerMs: percentiles(answers.map((a) => a.answeredAt - a.sentAt)),
  };
}

/** The deployment's processes and the receiver, PostgreSQL's backends, NATS and the driver. */
function serviceGroups(stage: Stage, deployment: DistributedDeployment): Measured[] {
  return deploymentGroups(
    { ...deployment, processes: [...deployment.processes, stage.sink.process] },
    stage.run.options.postgresUrl,
  );
}

/**
 * One measured phase of the service: validations (`validate`), then waiting for every delivery
 * they make; CPU is measured from the first validation to the last receipt.
 */
async function deliveryPhase(
  stage: Stage,
  deployment: DistributedDeployment,
  paths: string[],
  phase: PhaseResult,
  validate: () => Promise<ValidationAnswer[]>,
): Promise<ValidationAnswer[]> {
  await stage.sink.clear();
  const database = deployment.databaseName
    ? await DatabaseWindow.start(stage.run.options.postgresUrl, deployment.databaseName)
    : null;
  const cpu = CpuWindow.start(serviceGroups(stage, deployment));
  const started = Date.now();
  const answers = await validate();
  const validated = answers.filter((a): a is ValidationAnswer & { code: string } => a.code !== null);
  log(
    `${phase.label}: ${validated.length} of ${answers.length} validations answered 2xx; waiting for ${validated.length * paths.length} deliveries`,
  );
  let complete = await stage.sink.waitForDistinct(validated.length * paths.length, IDLE_TIMEOUT_MS);
  // A validation the gateway gave up on (503) may still have gone through, and its deliveries
  // count towards the total: wait until nothing more arrives before telling what is missing.
  if (complete && validated.length < answers.length)
    complete = !(await stage.sink.waitForDistinct(Number.MAX_SAFE_INTEGER, SETTLE_MS));
  const shares = await cpu.finish();
  phase.windowMs = Date.now() - started;
  phase.validations = validationFigures(answers);
  phase.deliveries = deliveryFigures(
    new Map(validated.map((a) => [a.code, a.answeredAt])),
    paths,
    await stage.sink.records(),
  );
  phase.cpu = cpuPerDelivery(shares, phase.deliveries.received, phase.windowMs);
  // The last attempts are recorded, and PostgreSQL has flushed its counters, before they are read.
  await sleep(SETTLE_MS);
  if (database) phase.databasePerDelivery = await database.perRequest(phase.deliveries.received);
  if (!complete)
    phase.remarks.push(
      `gave up waiting after ${IDLE_TIMEOUT_MS / 1000} s without a new delivery; missing e.g. ${phase.deliveries.missingExamples.join(", ")}`,
    );
  if (validated.length < answers.length)
    phase.remarks.push(
      `${answers.length - validated.length} validations did not answer 2xx: ${JSON.stringify(phase.validations.statusCodes)}`,
    );
  const outside = workOutside(phase.cpu);
  if (outside) phase.remarks.push(outside);
  const d = phase.deliveries;
  log(
    `${phase.label}: ${d.received}/${d.expected} deliveries, ${d.perSecond}/s, latency p50 ${d.latencyMs?.p50} ms, p99 ${d.latencyMs?.p99} ms, duplicates ${d.duplicates}, missing ${d.missing}`,
  );
  return answers;
}

/**
 * Unmeasured: proves the whole path (every service found, the receiver reached) and warms it, in
 * rounds of WARMUP_ROUND validations. Resolves to each round's CPU per delivery, sending side.
 */
async function warmUp(
  stage: Stage,
  deployment: DistributedDeployment,
  office: ApiClient,
  orderIds: number[],
  paths: string[],
): Promise<number[]> {
  const rounds: number[] = [];
  for (let from = 0; from < orderIds.length; from += WARMUP_ROUND) {
    await stage.sink.clear();
    const cpu = CpuWindow.start(serviceGroups(stage, deployment));
    const started = Date.now();
    const answers = await validateAll(
      deployment.baseUrl,
      office,
      orderIds.slice(from, from + WARMUP_ROUND),
      WARMUP_CONNECTIONS,
    );
    const failed = answers.filter((a) => a.code === null);
    if (failed.length > 0)
      throw new Error(`warm-up: ${failed.length} validations failed, e.g. ${failed[0].status} ${failed[0].body}`);
    const expected = answers.length * paths.length;
    if (!(await stage.sink.waitForDistinct(expected, IDLE_TIMEOUT_MS)))
      throw new Error(`warm-up: only ${(await stage.sink.count()).distinctIds} of ${expected} deliveries arrived`);
    rounds.push(sendingSideMs(cpuPerDelivery(await cpu.finish(), expected, Date.now() - started)));
  }
  log(`warm-up: CPU ms per delivery, sending side, by round of ${WARMUP_ROUND} validations: ${rounds.join(", ")}`);
  return rounds;
}

/**
 * The distributed mode with several webhooks processes: subscriptions, orders, warm-up, then the
 * burst and the steady phases. Resolves to the burst's validations (the baseline sends their
 * bodies) and the subscribed paths.
 */
async function measureService(
  stage: Stage,
  results: WebhooksBenchResults,
): Promise<{ burstAnswers: ValidationAnswer[]; paths: string[] }> {
  const { options } = stage;
  log(`deploying the distributed mode (${options.webhooksProcesses} webhooks processes)`);
  const deployment = await deployDistributed(stage.run, {
    bench: BENCH,
    replicas: { webhooks: options.webhooksProcesses },
    environment: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true" },
  });
  for (const p of deployment.processes) stage.names.set(p.pid, p.name);
  const rss = new PeakRss([...deployment.processes, stage.sink.process]);
  const phases = (["burst", "unordered", "per_entity", "steady", "calm", "noisy"] as const).map(newPhase);
  const [burst, unordered, perEntity, steady, calm, noisy] = phases;
  results.phases.push(...phases);
  try {
    const office = await createBackOffice(deployment.baseUrl, deployment.adminKey);
    const paths = await subscribeReceiver(deployment.baseUrl, office, stage.sink.urls, options.subscriptions);
    if (options.preload > 0 && deployment.databaseName) {
      log(`preload: writing ${options.preload} settled deliveries with SQL (not timed)`);
      const started = Date.now();
      results.preloadedDeliveries = await preloadDeliveries(
        stage.run.options.postgresUrl,
        deployment.databaseName,
        SUBSCRIBED_EVENT,
        options.preload,
        log,
      );
      log(`preload: done in ${Math.round((Date.now() - started) / 1000)} s`);
    }
    const sizes = [
      options.warmupOrders,
      options.burstOrders,
      options.steadyOrders,
      options.calmOrders,
      options.calmOrders,
    ];
    log(`creating ${sizes.reduce((a, b) => a + b)} orders (not timed)`);
    const ids = await createOrders(
      deployment.baseUrl,
      deployment.partner,
      sizes.reduce((a, b) => a + b),
      CREATE_CONCURRENCY,
      `webhooks-bench-${stage.run.runId}`,
    );
    const offsetOf = (i: number) => sizes.slice(0, i).reduce((a, b) => a + b, 0);
    const [warmupIds, burstIds, steadyIds, calmIds, noisyIds] = sizes.map((_, i) =>
      ids.slice(offsetOf(i), offsetOf(i + 1)),
    );
    await sleep(SETTLE_MS);

    log(`warm-up: ${warmupIds.length} validations, ${warmupIds.length * paths.length} deliveries`);
    results.warmupCpuMsPerDelivery = await warmUp(stage, deployment, office, warmupIds, paths);
    // The warm-up's updates leave dead rows (the orders, the outboxes): cleared as autovacuum
    // would have, so that the burst does not pay for the warm-up's garbage.
    if (deployment.databaseName) await vacuumAnalyze(stage.run.options.postgresUrl, deployment.databaseName);
    await sleep(SETTLE_MS);

    log(`burst: ${burstIds.length} validations over ${options.connections} connections`);
    const burstAnswers = await deliveryPhase(stage, deployment, paths, burst, () =>
      validateAll(deployment.baseUrl, office, burstIds, options.connections),
    );

    await measureOrdering(stage, deployment, office, paths, unordered, perEntity);

    log(`steady: ${steadyIds.length} validations at ${options.steadyRate}/s`);
    await deliveryPhase(stage, deployment, paths, steady, () =>
      validatePaced(deployment.baseUrl, office, steadyIds, options.steadyRate),
    );

    log(`calm: ${calmIds.length} validations at ${options.calmRate}/s, every subscriber healthy`);
    await deliveryPhase(stage, deployment, paths, calm, () =>
      validatePaced(deployment.baseUrl, office, calmIds, options.calmRate),
    );

    // The last subscriber hangs from now on: its deliveries are not expected, the others' are.
    await stage.sink.hang(paths.length - 1);
    log(
      `noisy: ${noisyIds.length} validations at ${options.calmRate}/s, ${paths[paths.length - 1]} on its own origin hanging`,
    );
    await deliveryPhase(stage, deployment, paths.slice(0, -1), noisy, () =>
      validatePaced(deployment.baseUrl, office, noisyIds, options.calmRate),
    );
    await stage.sink.answerAll();
    return { burstAnswers, paths };
  } catch (err) {
    for (const phase of phases) if (!phase.deliveries) phase.error = errorText(err);
    throw err;
  } finally {
    results.processes.push(...rss.finish());
    await deployment.tearDown();
    // LOG_LEVEL=warn: anything a process printed is a warning or an error worth a look.
    for (const p of [...deployment.processes, stage.sink.process].filter((p) => p.linesWritten > 0)) {
      results.remarks.push(`${p.name} logged ${p.linesWritten} line(s) at warn or above`);
      console.error(`--- last lines of ${p.name} ---\n${p.output()}`);
    }
  }
}

/**
 * The unordered and per_entity phases: orders of five changes each, delivered with `ordering:
 * none` and then `per_entity`; the subscriptions are `none` again afterwards.
 */
async function measureOrdering(
  stage: Stage,
  deployment: DistributedDeployment,
  office: ApiClient,
  paths: string[],
  ...phases: [PhaseResult, PhaseResult]
): Promise<void> {
  const orders = stage.options.orderedOrders;
  if (!deployment.databaseName) throw new Error("the ordering phases write to the run's database: it has none");
  const databaseName = deployment.databaseName;
  for (const [i, phase] of phases.entries()) {
    const ordering = phase.id === "per_entity" ? "per_entity" : "none";
    await setOrdering(deployment.baseUrl, office, ordering);
    log(`${phase.label}: ${orders} orders × ${EVENTS_PER_ORDER} changes, ordering ${ordering}`);
    await deliveryPhase(stage, deployment, paths, phase, () =>
      emitOrderChanges(
        stage.run.options.postgresUrl,
        databaseName,
        deployment.partner.clientId,
        phase.label,
        i * orders + 1,
        orders,
      ),
    );
    phase.linesOutOfOrder = linesOutOfOrder(await stage.sink.records(), phase.label);
    log(`${phase.label}: ${phase.linesOutOfOrder} (order, subscription) lines out of version order`);
  }
  await setOrdering(deployment.baseUrl, office, "none");
}

/**
 * The bare loop runs this many times, each with senders of its own (and their warm-up): one run
 * lasts about 2 s, over which the VM's own jitter moved its rate by a third from run to run
 * (bench/README.md, issue 23, "The burst measured V8 warming up"); the median run is reported.
 */
const BASELINE_RUNS = 3;

/**
 * The same bodies to the same receiver paths, from `senders` bare processes with `inFlight`
 * requests each, BASELINE_RUNS times: the run with the median rate is the baseline phase.
 */
async function measureBaseline(
  stage: Stage,
  answers: ValidationAnswer[],
  paths: string[],
  senders: number,
  inFlight: number,
  results: WebhooksBenchResults,
): Promise<void> {
  const validated = answers.filter((a): a is ValidationAnswer & { code: string } => a.code !== null);
  const folder = mkdtempSync(path.join(os.tmpdir(), "webhooks-bench-"));
  const bodiesFile = path.join(folder, "bodies.json");
  writeFileSync(bodiesFile, JSON.stringify(validated.map((a) => a.body)));
  const runs: { phase: PhaseResult; memory: ProcessMemory[] }[] = [];
  try {
    for (let i = 0; i < BASELINE_RUNS; i++) {
      const run = { phase: newPhase("baseline"), memory: [] };
      runs.push(run);
      await baselineRun(stage, bodiesFile, validated, paths, senders, inFlight, run);
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
    const rate = (r: (typeof runs)[number]) => r.phase.deliveries?.perSecond ?? 0;
    // A failed run is the one to report; otherwise the median.
    const reported =
      runs.find((r) => r.phase.error !== undefined) ??
      [...runs].sort((a, b) => rate(a) - rate(b))[Math.floor((runs.length - 1) / 2)];
    if (reported) {
      if (runs.length > 1 && reported.phase.error === undefined)
        reported.phase.remarks.unshift(
          `the median of ${runs.length} runs of the bare loop: ${runs.map(rate).join(", ")} requests/s`,
        );
      results.phases.push(reported.phase);
      results.processes.push(...reported.memory);
    }
  }
}

/** One run of the bare loop: its figures into `phase`, its senders' peak RSS into `memory`. */
async function baselineRun(
  stage: Stage,
  bodiesFile: string,
  validated: (ValidationAnswer & { code: string })[],
  paths: string[],
  senders: number,
  inFlight: number,
  { phase, memory }: { phase: PhaseResult; memory: ProcessMemory[] },
): Promise<void> {
  const clients = Array.from({ length: senders }, (_, k) =>
    BenchProcess.start(
      `baseline-sender-${k + 1}`,
      dist("bench/webhook-baseline-client.js"),
      process.env,
      [
        "--urls",
        stage.sink.urls.join(","),
        "--bodies",
        bodiesFile,
        "--paths",
        String(paths.length),
        "--in-flight",
        String(inFlight),
        "--share",
        `${k}/${senders}`,
        "--warmup",
        String(stage.options.baselineWarmup),
      ],
      stage.run.nodeArgs,
    ),
  );
  for (const c of clients) stage.names.set(c.pid, c.name);
  const rss = new PeakRss(clients);
  try {
    await Promise.all(clients.map((c) => c.waitForLine((line) => line.includes('"ready":true'), BASELINE_READY_MS)));
    await stage.sink.clear();
    const groups: Measured[] = [...clients, stage.sink.process].map((p) => ({
      name: p.name,
      pids: () => [p.pid],
    }));
    const cpu = CpuWindow.start([...groups, { name: "load generator", pids: () => [process.pid] }]);
    const started = Date.now();
    const done = clients.map((c) => c.waitForLine((line) => line.startsWith('{"done":true'), BASELINE_DONE_MS));
    for (const c of clients) c.signal("SIGUSR2");
    const reports = (await Promise.all(done)).map((line) => JSON.parse(line) as BaselineSenderReport);
    const shares = await cpu.finish();
    phase.windowMs = Date.now() - started;
    phase.senders = {
      sent: reports.reduce((s, r) => s + r.sent, 0),
      succeeded: reports.reduce((s, r) => s + r.succeeded, 0),
      statusCodes: reports.reduce<Record<string, number>>((all, r) => {
        for (const [code, n] of Object.entries(r.statusCodes)) all[code] = (all[code] ?? 0) + n;
        return all;
      }, {}),
    };
    phase.deliveries = deliveryFigures(
      new Map(validated.map((a) => [a.code, null])),
      paths,
      await stage.sink.records(),
    );
    phase.cpu = cpuPerDelivery(shares, phase.deliveries.received, phase.windowMs);
    const outside = workOutside(phase.cpu);
    if (outside) phase.remarks.push(outside);
    const d = phase.deliveries;
    log(
      `baseline: ${d.received}/${d.expected} requests received, ${d.perSecond}/s, senders got ${phase.senders.succeeded} 2xx of ${phase.senders.sent}`,
    );
  } catch (err) {
    phase.error = errorText(err);
    throw err;
  } finally {
    memory.push(...rss.finish());
    await stopAll(clients);
  }
}

/** After Ctrl-C: every process stopped, the namespace's streams and the run's database gone. */
async function cleanUpInterrupted(run: DistributedRun): Promise<void> {
  await stopAll();
  await deleteNamespaceStreams(run.options.natsUrl, benchNamespace(run.runId, BENCH)).catch(() => undefined);
  await dropDatabase(run.options.postgresUrl, benchDatabaseName(run.runId, distributedDatabaseSuffix(BENCH))).catch(
    () => undefined,
  );
}

async function main(): Promise<void> {
  const options = parseWebhooksOptions(process.argv.slice(2));
  const startedAt = new Date().toISOString();
  const profileDir = options.cpuProfile ? mkdtempSync(path.join(os.tmpdir(), "webhooks-bench-profiles-")) : undefined;
  const run: DistributedRun = {
    runId: newRunId(startedAt),
    nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
    options: { postgresUrl: options.postgresUrl, natsUrl: options.natsUrl },
  };
  process.once("SIGINT", () => {
    log("interrupted: stopping every process started, deleting the run's streams and database");
    void cleanUpInterrupted(run).then(() => process.exit(130));
  });
  // The services read the same environment: the dispatchers' batch is the baseline's concurrency.
  const dispatch = config().webhooks;
  const results: WebhooksBenchResults = {
    benchmark: "webhooks",
    startedAt,
    finishedAt: "",
    code: codeVersion(),
    machine: await describeMachine({ postgresUrl: options.postgresUrl, natsUrl: options.natsUrl }),
    settings: {
      subscriptions: options.subscriptions,
      warmupOrders: options.warmupOrders,
      orderedOrders: options.orderedOrders,
      burstOrders: options.burstOrders,
      burstConnections: options.connections,
      steadyRate: options.steadyRate,
      steadyOrders: options.steadyOrders,
      calmRate: options.calmRate,
      calmOrders: options.calmOrders,
      preload: options.preload,
      webhooksProcesses: options.webhooksProcesses,
      dispatchBatch: dispatch.dispatchBatch,
      dispatchIntervalMs: dispatch.dispatchIntervalMs,
      baselineSenders: options.webhooksProcesses,
      baselineInFlightPerSender: dispatch.dispatchBatch,
      baselineWarmupPerSender: options.baselineWarmup,
    },
    processes: [],
    phases: [],
    goal: [],
    remarks: [],
  };

  const sink = await WebhookSink.start(options.subscriptions, run.nodeArgs);
  const stage: Stage = { run, options, sink, names: new Map([[sink.process.pid, sink.process.name]]) };
  try {
    const { burstAnswers, paths } = await measureService(stage, results);
    log(`baseline: ${options.webhooksProcesses} senders × ${dispatch.dispatchBatch} in flight`);
    await measureBaseline(stage, burstAnswers, paths, options.webhooksProcesses, dispatch.dispatchBatch, results);
  } catch (err) {
    results.error = errorText(err);
    log(`failed: ${results.error}`);
  } finally {
    await sink.stop();
  }
  results.finishedAt = new Date().toISOString();
  results.goal = checkWebhookGoal(results.phases, options);
  if (profileDir) {
    results.profile = summarizeProfiles(profileDir, stage.names);
    console.log(`\nCPU profile of each process (share of its busy samples):\n\n${profileReport(results.profile)}\n`);
  }
  console.log(`\n${consoleSummary(results)}\n`);
  if (options.write) log(`results written to ${writeWebhookResults(results)} and bench/README.md`);
  else log("--no-write (or --cpu-prof): nothing written");
  if (results.error) process.exitCode = 1;
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
