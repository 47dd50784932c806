/**
 * `npm run bench:orders`: POST /api/v1/orders under load (then POST /api/v1/orders/batch,
 * bench/batch-run.ts), in the embedded mode (PGlite, and PostgreSQL), in the distributed mode (a process per service over NATS) and against a bare
 * node:http + pg baseline running the same SQL — one run, one after the other, each on fresh
 * storage. Writes bench/results/orders-<timestamp>.json and the table in bench/README.md.
 * Figures, not a test: nothing here fails because a figure is poor.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { DatabaseWindow } from "./database-activity";
import { codeVersion, describeMachine, type MachineDescription } from "./environment";
import { CpuWindow, deploymentGroups, perUnit, type CpuShare } from "./cpu-time";
import { getOrdersPage, postOrders, type LoadFigures, type LoadSettings } from "./load";
import { ITEMS_PER_ORDER } from "./order-payload";
import { parseOptions, UsageError, type BenchOptions } from "./options";
import { PeakRss } from "./peak-rss";
import { DEEP_PAGE, PAGE_LIMIT, outboxDrained, pageCursor, preloadOrders } from "./preload";
import { profileReport, summarizeProfiles } from "./profile-summary";
import { stopAll } from "./processes";
import {
  checkGoal,
  cpuTable,
  goalTable,
  preloadTable,
  resultsTable,
  workOutside,
  writeResults,
  type BenchResults,
  type PreloadedRun,
  type TargetResult,
} from "./report";
import { placeOneOrder } from "./seed";
import { batchSection, batchTable, measureBatches } from "./batch-run";
import { TARGETS, type Deployment, type RunContext, type TargetSpec } from "./targets";

const SETTLE_MS = 2_000;

const log = (line: string) => console.log(`[bench] ${line}`);

async function measure(spec: TargetSpec, run: RunContext, settings: LoadSettings): Promise<TargetResult> {
  const result: TargetResult = {
    id: spec.id,
    label: spec.label,
    description: spec.description,
    loadAverageBefore: Math.round(os.loadavg()[0] * 100) / 100,
    processes: [],
    figures: null,
    cpu: [],
    remarks: [],
  };
  log(`${spec.label}: starting and seeding through the API`);
  let deployment: Deployment;
  try {
    deployment = await spec.deploy(run);
  } catch (err) {
    result.error = `could not be deployed: ${err instanceof Error ? err.message : String(err)}`;
    log(`${spec.label}: ${result.error}`);
    return result;
  }
  const rss = new PeakRss(deployment.processes);
  try {
    await loadAndMeasure(spec, deployment, run, settings, result);
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    log(`${spec.label}: failed: ${result.error}`);
  } finally {
    result.processes = rss.finish();
    await deployment.tearDown();
  }
  reportProcesses(spec, deployment, run, result);
  const f = result.figures;
  if (f)
    log(
      `${spec.label}: ${f.requestsPerSecond.mean} req/s, p50 ${f.latencyMs.p50} ms, p99 ${f.latencyMs.p99} ms, non-2xx ${f.non2xx}, errors ${f.errors}`,
    );
  return result;
}

/** One order to prove the path, the warm-up, then the measured run with its CPU and database windows. */
async function loadAndMeasure(
  spec: TargetSpec,
  deployment: Deployment,
  run: RunContext,
  settings: LoadSettings,
  result: TargetResult,
): Promise<void> {
  await placeOneOrder(deployment.baseUrl, deployment.partner);
  if (settings.warmupSeconds > 0) {
    log(`${spec.label}: ${settings.warmupSeconds} s warm-up`);
    await postOrders(deployment.baseUrl, deployment.partner, settings.connections, settings.warmupSeconds);
  }
  log(`${spec.label}: ${settings.durationSeconds} s at ${settings.connections} connections`);
  const database = deployment.databaseName
    ? await DatabaseWindow.start(run.options.postgresUrl, deployment.databaseName)
    : null;
  const cpu = CpuWindow.start(deploymentGroups(deployment, run.options.postgresUrl));
  const figures = await postOrders(
    deployment.baseUrl,
    deployment.partner,
    settings.connections,
    settings.durationSeconds,
  );
  result.cpu = perRequest(await cpu.finish(), figures);
  result.figures = figures;
  const outside = workOutside(result.cpu);
  if (outside) result.remarks.push(outside);
  // Requests still in flight when autocannon stopped finish (and PostgreSQL flushes its counters)
  // before the counters are read and the processes stopped.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  if (database) result.databasePerRequest = await database.perRequest(figures.requests);
  // The baseline serves POST /orders only.
  if (run.options.batch > 0 && spec.id !== "baseline")
    result.batch = await measureBatches(deployment, run, settings, (line) => log(`${spec.label}: ${line}`));
  if (run.options.preload > 0 && deployment.databaseName)
    result.preloaded = await measurePreloaded(spec, deployment, run, settings);
}

/** --preload: N more orders by SQL, the same load again, then the partner's first and 1001st page. */
async function measurePreloaded(
  spec: TargetSpec,
  deployment: Deployment,
  run: RunContext,
  settings: LoadSettings,
): Promise<PreloadedRun> {
  const url = new URL(run.options.postgresUrl);
  url.pathname = `/${deployment.databaseName}`;
  log(`${spec.label}: preloading ${run.options.preload.toLocaleString("en")} orders with SQL`);
  const preload = await preloadOrders(url.toString(), deployment.partner, run.options.preload, (line) =>
    log(`${spec.label}: ${line}`),
  );
  log(
    `${spec.label}: preloaded in ${preload.seconds} s (database ${preload.databaseMB} MB); ${settings.durationSeconds} s of orders again`,
  );
  const { baseUrl, partner } = deployment;
  const { connections, durationSeconds } = settings;
  const settled = () => outboxDrained(url.toString()).then(() => new Promise((r) => setTimeout(r, SETTLE_MS)));
  // As on the fresh database: a warm-up, then the measured run with the pipeline busy behind it.
  await settled();
  if (settings.warmupSeconds > 0) await postOrders(baseUrl, partner, connections, settings.warmupSeconds);
  const cpu = CpuWindow.start(deploymentGroups(deployment, run.options.postgresUrl));
  const intake = await postOrders(baseUrl, partner, connections, durationSeconds);
  const intakeCpu = perRequest(await cpu.finish(), intake);
  // The baseline serves POST /orders only: no pages to read there.
  if (spec.id === "baseline") return { preload, intake, intakeCpu, firstPage: null, deepPage: null };
  await settled();
  const firstPage = await getOrdersPage(baseUrl, partner, `limit=${PAGE_LIMIT}`, connections, durationSeconds);
  const deep = run.options.preload >= (DEEP_PAGE - 1) * PAGE_LIMIT;
  const cursor = deep ? await pageCursor(url.toString(), partner.clientId, DEEP_PAGE) : null;
  const deepPage = cursor
    ? await getOrdersPage(baseUrl, partner, `limit=${PAGE_LIMIT}&cursor=${cursor}`, connections, durationSeconds)
    : null;
  for (const [what, f] of [
    ["intake", intake],
    ["page 1", firstPage],
    [`page ${DEEP_PAGE}`, deepPage],
  ] as const) {
    if (f && (f.non2xx > 0 || f.errors > 0))
      log(`${spec.label}: ${what} on the preloaded database: ${f.non2xx} non-2xx, ${f.errors} errors`);
  }
  return { preload, intake, intakeCpu, firstPage, deepPage };
}

/** With --cpu-prof, where each process's CPU went; and whatever the processes logged. */
function reportProcesses(spec: TargetSpec, deployment: Deployment, run: RunContext, result: TargetResult): void {
  if (run.profileDir) {
    result.profile = summarizeProfiles(run.profileDir, new Map(deployment.processes.map((p) => [p.pid, p.name])));
    console.log(
      `\n${spec.label}, CPU profile of each process (share of its busy samples):\n\n${profileReport(result.profile)}\n`,
    );
  }
  // LOG_LEVEL=warn: anything a process printed is a warning or an error worth a look.
  for (const p of deployment.processes.filter((p) => p.linesWritten > 0)) {
    result.remarks.push(`${p.name} logged ${p.linesWritten} line(s) at warn or above`);
    console.error(`--- last lines of ${p.name} ---\n${p.output()}`);
  }
}

function perRequest(shares: CpuShare[], figures: LoadFigures): TargetResult["cpu"] {
  return perUnit(shares, figures.requests, figures.durationSeconds * 1000).map(({ name, msPerUnit, cores }) => ({
    name,
    msPerRequest: msPerUnit,
    cores,
  }));
}

function machine(options: BenchOptions): Promise<MachineDescription> {
  return describeMachine({
    postgresUrl: options.targets.some((t) => t !== "embedded") ? options.postgresUrl : undefined,
    natsUrl: options.targets.includes("distributed") ? options.natsUrl : undefined,
  });
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date().toISOString();
  const profileDir = options.cpuProfile ? mkdtempSync(path.join(os.tmpdir(), "orders-bench-profiles-")) : undefined;
  const run: RunContext = {
    options,
    runId: `${startedAt.slice(0, 10).replace(/-/g, "")}_${randomBytes(3).toString("hex")}`,
    nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
    profileDir,
  };
  const settings: LoadSettings = {
    connections: options.connections,
    durationSeconds: options.durationSeconds,
    warmupSeconds: options.warmupSeconds,
  };
  process.once("SIGINT", () => {
    log(
      `interrupted: stopping every process started; databases named oi_bench_${run.runId}_* may be left to drop by hand`,
    );
    void stopAll().then(() => process.exit(130));
  });

  const environment = await machine(options);
  const targets: TargetResult[] = [];
  for (const id of options.targets) targets.push(await measure(TARGETS[id], run, settings));

  const results: BenchResults = {
    benchmark: "orders",
    startedAt,
    finishedAt: new Date().toISOString(),
    code: codeVersion(),
    machine: environment,
    settings: {
      ...settings,
      request: `POST /api/v1/orders, ${ITEMS_PER_ORDER} items, contact and packagings by the partner's references, a unique externalId per request`,
    },
    targets,
    goal: checkGoal(targets),
  };
  const preloaded = preloadTable(results);
  const batches = batchTable(results);
  console.log(
    `\n${resultsTable(results)}\n\n${cpuTable(results)}\n\n${preloaded ? `${preloaded}\n\n` : ""}${batches ? `${batches}\n\n` : ""}${goalTable(results.goal)}\n`,
  );
  if (options.write) log(`results written to ${writeResults(results, batchSection(results))} and bench/README.md`);
  else log("--no-write: nothing written");
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
