/**
 * `npm run bench:orders`: POST /api/v1/orders under load, in the embedded mode (PGlite, and
 * PostgreSQL), in the distributed mode (a process per service over NATS) and against a bare
 * node:http + pg baseline running the same SQL — one run, one after the other, each on fresh
 * storage. Writes bench/results/orders-<timestamp>.json and the table in bench/README.md.
 * Figures, not a test: nothing here fails because a figure is poor.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { serverVersion } from "./databases";
import { DatabaseWindow } from "./database-activity";
import { backendPids, CpuWindow, pidsOfCommand, type CpuShare, type Measured } from "./cpu-time";
import { postOrders, type LoadFigures, type LoadSettings } from "./load";
import { natsServerVersion } from "./nats-namespace";
import { ITEMS_PER_ORDER } from "./order-payload";
import { parseOptions, UsageError, type BenchOptions } from "./options";
import { PeakRss } from "./peak-rss";
import { profileReport, summarizeProfiles } from "./profile-summary";
import { ROOT, stopAll } from "./processes";
import { checkGoal, cpuTable, goalTable, resultsTable, workOutside, writeResults, type BenchResults, type TargetResult } from "./report";
import { placeOneOrder } from "./seed";
import { TARGETS, type Deployment, type RunContext, type TargetSpec } from "./targets";

const SETTLE_MS = 2_000;

const log = (line: string) => console.log(`[bench] ${line}`);

async function measure(spec: TargetSpec, run: RunContext, settings: LoadSettings): Promise<TargetResult> {
  const result: TargetResult = {
    id: spec.id, label: spec.label, description: spec.description,
    loadAverageBefore: Math.round(os.loadavg()[0] * 100) / 100, processes: [], figures: null, cpu: [], remarks: [],
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
  if (f) log(`${spec.label}: ${f.requestsPerSecond.mean} req/s, p50 ${f.latencyMs.p50} ms, p99 ${f.latencyMs.p99} ms, non-2xx ${f.non2xx}, errors ${f.errors}`);
  return result;
}

/** One order to prove the path, the warm-up, then the measured run with its CPU and database windows. */
async function loadAndMeasure(spec: TargetSpec, deployment: Deployment, run: RunContext, settings: LoadSettings, result: TargetResult): Promise<void> {
  await placeOneOrder(deployment.baseUrl, deployment.partner);
  if (settings.warmupSeconds > 0) {
    log(`${spec.label}: ${settings.warmupSeconds} s warm-up`);
    await postOrders(deployment.baseUrl, deployment.partner, settings.connections, settings.warmupSeconds);
  }
  log(`${spec.label}: ${settings.durationSeconds} s at ${settings.connections} connections`);
  const database = deployment.databaseName ? await DatabaseWindow.start(run.options.postgresUrl, deployment.databaseName) : null;
  const cpu = CpuWindow.start(cpuGroups(deployment, run.options.postgresUrl));
  const figures = await postOrders(deployment.baseUrl, deployment.partner, settings.connections, settings.durationSeconds);
  result.cpu = perRequest(await cpu.finish(), figures);
  result.figures = figures;
  const outside = workOutside(result.cpu);
  if (outside) result.remarks.push(outside);
  // Requests still in flight when autocannon stopped finish (and PostgreSQL flushes its counters)
  // before the counters are read and the processes stopped.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  if (database) result.databasePerRequest = await database.perRequest(figures.requests);
}

/** With --cpu-prof, where each process's CPU went; and whatever the processes logged. */
function reportProcesses(spec: TargetSpec, deployment: Deployment, run: RunContext, result: TargetResult): void {
  if (run.profileDir) {
    result.profile = summarizeProfiles(run.profileDir, new Map(deployment.processes.map((p) => [p.pid, p.name])));
    console.log(`\n${spec.label}, CPU profile of each process (share of its busy samples):\n\n${profileReport(result.profile)}\n`);
  }
  // LOG_LEVEL=warn: anything a process printed is a warning or an error worth a look.
  for (const p of deployment.processes.filter((p) => p.linesWritten > 0)) {
    result.remarks.push(`${p.name} logged ${p.linesWritten} line(s) at warn or above`);
    console.error(`--- last lines of ${p.name} ---\n${p.output()}`);
  }
}

/** Each process of the target, PostgreSQL's backends for its database, and this process (autocannon). */
function cpuGroups(deployment: Deployment, postgresUrl: string): Measured[] {
  const groups: Measured[] = deployment.processes.map((p) => ({ name: p.name, pids: async () => [p.pid] }));
  const database = deployment.databaseName;
  if (database) groups.push({ name: "postgres", pids: () => backendPids(postgresUrl, database) });
  const natsPort = deployment.natsPort;
  // The machine's NATS server may be shared: another deployment's traffic would be counted too.
  if (natsPort) groups.push({ name: "nats-server", pids: () => pidsOfCommand("nats-server", natsPort) });
  groups.push({ name: "load generator", pids: async () => [process.pid] });
  return groups;
}

function perRequest(shares: CpuShare[], figures: LoadFigures): TargetResult["cpu"] {
  const requests = Math.max(1, figures.requests);
  const wallMs = figures.durationSeconds * 1000;
  return shares.map((s) => ({ name: s.name, msPerRequest: Math.round((s.cpuMs / requests) * 100) / 100, cores: Math.round((s.cpuMs / wallMs) * 100) / 100 }));
}

function codeVersion(): BenchResults["code"] {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
  try {
    return { commit: git("rev-parse", "--short", "HEAD"), uncommittedChanges: git("status", "--porcelain").length > 0 };
  } catch {
    return { commit: "unknown", uncommittedChanges: true };
  }
}

async function machine(options: BenchOptions): Promise<BenchResults["machine"]> {
  const cpus = os.cpus();
  const needsPostgres = options.targets.some((t) => t !== "embedded");
  return {
    cores: cpus.length,
    cpus: `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}`,
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.versions.node,
    postgres: needsPostgres ? await serverVersion(options.postgresUrl) : "not used",
    nats: options.targets.includes("distributed") ? await natsServerVersion(options.natsUrl) : "not used",
  };
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
  const settings: LoadSettings = { connections: options.connections, durationSeconds: options.durationSeconds, warmupSeconds: options.warmupSeconds };
  process.once("SIGINT", () => {
    log(`interrupted: stopping every process started; databases named oi_bench_${run.runId}_* may be left to drop by hand`);
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
    settings: { ...settings, request: `POST /api/v1/orders, ${ITEMS_PER_ORDER} items, contact and packagings by the partner's references, a unique externalId per request` },
    targets,
    goal: checkGoal(targets),
  };
  console.log(`\n${resultsTable(results)}\n\n${cpuTable(results)}\n\n${goalTable(results.goal)}\n`);
  if (options.write) log(`results written to ${writeResults(results)} and bench/README.md`);
  else log("--no-write: nothing written");
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
