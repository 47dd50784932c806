/**
 * What a run leaves behind: the results as JSON under bench/results/, and the table and the
 * verdict against the issue's target in bench/README.md, between its `results` markers
 * (the rest of the README is written by hand and kept).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { LoadFigures, LoadSettings } from "./load";
import type { TargetId } from "./options";
import { OTHER_PREFIX, WHOLE_MACHINE } from "./cpu-time";
import type { DatabaseCounters } from "./database-activity";
import type { CodeVersion, MachineDescription } from "./environment";
import type { ProcessMemory } from "./peak-rss";
import type { PreloadFigures } from "./preload";
import type { ProcessProfile } from "./profile-summary";
import { ROOT } from "./processes";

export interface TargetResult {
  id: TargetId;
  label: string;
  description: string;
  /** One-minute load average just before the target started (it still carries the previous target's load). */
  loadAverageBefore: number;
  processes: ProcessMemory[];
  figures: LoadFigures | null;
  /**
   * CPU spent during the measured window, per process (and "postgres": the backends of the
   * target's database; "load generator": autocannon; "whole machine": every core, everything
   * running): ms per request and average cores busy.
   */
  cpu: { name: string; msPerRequest: number; cores: number }[];
  /** The target database's counters during the measured window, per request (PostgreSQL targets). */
  databasePerRequest?: DatabaseCounters;
  /** With --cpu-prof: where each process's CPU went. */
  profile?: ProcessProfile[];
  /** With --preload: the same load again once the database holds that many more orders, and two pages. */
  preloaded?: PreloadedRun;
  /** With --batch N (100 by default): the same orders again, N a request through POST /orders/batch (bench/batch-run.ts). */
  batch?: BatchRun;
  /** Why there are no figures. */
  error?: string;
  remarks: string[];
}

export interface PreloadedRun {
  preload: PreloadFigures;
  intake: LoadFigures;
  /** CPU during the preloaded intake, as TargetResult.cpu: steadier than req/s when others share the machine. */
  intakeCpu: TargetResult["cpu"];
  /** GET /api/v1/orders, first page and page 1001 (null for the baseline, or when the partner has too few orders). */
  firstPage: LoadFigures | null;
  deepPage: LoadFigures | null;
}

export interface BatchRun {
  /** Orders per request. */
  size: number;
  connections: number;
  figures: LoadFigures;
  /** Orders taken a second (answered 200, every row 201). */
  ordersPerSecond: number;
  /** As TargetResult.cpu, per order taken (`msPerRequest` is ms per order). */
  cpu: TargetResult["cpu"];
}

export interface GoalCheck {
  criterion: string;
  measured: string;
  /** null: not measured in this run. */
  met: boolean | null;
}

export interface BenchResults {
  benchmark: "orders";
  startedAt: string;
  finishedAt: string;
  code: CodeVersion;
  machine: MachineDescription;
  settings: LoadSettings & { request: string };
  targets: TargetResult[];
  goal: GoalCheck[];
}

/** The issue's target for the distributed mode, against the baseline. */
export const GOAL = { minThroughputRatio: 0.5, maxP99Ratio: 3, maxRssMB: 200 } as const;

export function checkGoal(targets: TargetResult[]): GoalCheck[] {
  const b = targets.find((t) => t.id === "distributed");
  const c = targets.find((t) => t.id === "baseline");
  const bf = b?.figures ?? null;
  const cf = c?.figures ?? null;
  const both = bf && cf;
  const biggest =
    b && b.processes.length > 0 ? b.processes.reduce((m, p) => (p.peakRssMB > m.peakRssMB ? p : m)) : null;
  return [
    {
      criterion: `(b) req/s ≥ ${GOAL.minThroughputRatio} × (c) req/s`,
      measured: both
        ? `${bf.requestsPerSecond.mean} vs ${GOAL.minThroughputRatio} × ${cf.requestsPerSecond.mean} = ${round(GOAL.minThroughputRatio * cf.requestsPerSecond.mean)} (ratio ${ratio(bf.requestsPerSecond.mean, cf.requestsPerSecond.mean)})`
        : "not measured",
      met: both ? bf.requestsPerSecond.mean >= GOAL.minThroughputRatio * cf.requestsPerSecond.mean : null,
    },
    {
      criterion: `(b) p99 ≤ ${GOAL.maxP99Ratio} × (c) p99`,
      measured: both
        ? `${bf.latencyMs.p99} ms vs ${GOAL.maxP99Ratio} × ${cf.latencyMs.p99} ms = ${GOAL.maxP99Ratio * cf.latencyMs.p99} ms (ratio ${ratio(bf.latencyMs.p99, cf.latencyMs.p99)})`
        : "not measured",
      met: both ? bf.latencyMs.p99 <= GOAL.maxP99Ratio * cf.latencyMs.p99 : null,
    },
    {
      criterion: `no process of (b) above ${GOAL.maxRssMB} MB RSS`,
      measured: biggest ? `largest: ${biggest.name} ${biggest.peakRssMB} MB` : "not measured",
      met: biggest ? biggest.peakRssMB <= GOAL.maxRssMB : null,
    },
    {
      criterion: "(b) answered every request with 2xx (no non-2xx, no errors)",
      measured: bf ? `${bf.non2xx} non-2xx, ${bf.errors} errors in ${bf.requests} requests` : "not measured",
      met: bf ? bf.non2xx === 0 && bf.errors === 0 : null,
    },
  ];
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function ratio(a: number, b: number): string {
  return b > 0 ? (a / b).toFixed(2) : "n/a";
}

export const verdict = (met: boolean | null) => (met === null ? "not measured" : met ? "**met**" : "**not met**");

export function resultsTable(results: BenchResults): string {
  const rows = results.targets.map((t) => {
    const f = t.figures;
    const memory = t.processes.map((p) => `${p.name} ${p.peakRssMB}`).join(", ") || "–";
    if (!f) return `| ${t.label} | failed: ${t.error ?? "no figures"} | | | | | | ${memory} |`;
    return `| ${t.label} | ${f.requestsPerSecond.mean} | ${f.latencyMs.p50} | ${f.latencyMs.p99} | ${f.requests} | ${f.non2xx} | ${f.errors} | ${memory} |`;
  });
  return [
    "| target | req/s (mean) | p50 (ms) | p99 (ms) | requests | non-2xx | errors | peak RSS per process (MB) |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...rows,
  ].join("\n");
}

/** CPU per request of the target's own processes (not the load generator, not others), in ms. */
export function serverSideMs(cpu: TargetResult["cpu"]): number {
  const own = cpu.filter(
    (c) => c.name !== WHOLE_MACHINE && !c.name.startsWith(OTHER_PREFIX) && c.name !== "load generator",
  );
  return Math.round(own.reduce((sum, c) => sum + c.msPerRequest, 0) * 100) / 100;
}

/** CPU per request of each part, in ms (cores busy on average), one row per target. */
export function cpuTable(results: BenchResults): string {
  const rows = results.targets
    .filter((t) => t.cpu.length > 0)
    .map((t) => {
      const isOther = (c: { name: string }) => c.name.startsWith(OTHER_PREFIX);
      const measured = t.cpu.filter((c) => c.name !== WHOLE_MACHINE && !isOther(c));
      const machine = t.cpu.find((c) => c.name === WHOLE_MACHINE);
      const parts = measured.map((c) => `${c.name} ${c.msPerRequest} (${c.cores})`).join(", ");
      const others =
        t.cpu
          .filter((c) => isOther(c) && c.cores >= NOTABLE_CORES)
          .map((c) => `${c.name.slice(OTHER_PREFIX.length)} ${c.cores}`)
          .join(", ") || "–";
      const total = serverSideMs(t.cpu);
      return `| ${t.label} | ${total} | ${parts} | ${machine ? `${machine.cores} of ${results.machine.cores}` : "–"} | ${others} |`;
    });
  return [
    "| target | CPU ms per order, server side | per process: ms per order (cores busy) | whole machine: cores busy | busiest other processes: cores |",
    "|---|---:|---|---:|---|",
    ...rows,
  ].join("\n");
}

/** A CPU share as the tables use it: who, and how many cores it kept busy on average. */
export interface CoresBusy {
  name: string;
  cores: number;
}

/** Cores busy outside the measured processes above which a run is said to be disturbed. */
const OUTSIDE_WORK_NOTED = 0.25;
/** Other processes below this are not worth naming. */
export const NOTABLE_CORES = 0.02;

/** Cores busy, on average, outside the target's own processes (and the load generator) during the window. */
export function coresOutside(cpu: CoresBusy[]): number | null {
  const machine = cpu.find((c) => c.name === WHOLE_MACHINE);
  if (!machine) return null;
  const measured = cpu
    .filter((c) => c.name !== WHOLE_MACHINE && !c.name.startsWith(OTHER_PREFIX))
    .reduce((sum, c) => sum + c.cores, 0);
  return Math.max(0, Math.round((machine.cores - measured) * 100) / 100);
}

/**
 * A remark when the machine was busy with more than the target during the measured window
 * (NATS counts here too, for the distributed target): its figures are then pessimistic.
 */
export function workOutside(cpu: CoresBusy[]): string | null {
  const outside = coresOutside(cpu);
  if (outside === null || outside < OUTSIDE_WORK_NOTED) return null;
  const busiest = cpu
    .filter((c) => c.name.startsWith(OTHER_PREFIX) && c.cores >= NOTABLE_CORES)
    .map((c) => `${c.name.slice(OTHER_PREFIX.length)} ${c.cores}`);
  return `${outside} cores were busy outside the measured processes during the window (busiest other processes: ${busiest.join(", ") || "none still running at the end"}); the rest is processes that ended meanwhile and the kernel`;
}

/** PostgreSQL's counters per order, for the targets on PostgreSQL. */
export function databaseTable(results: BenchResults): string {
  const rows = results.targets.flatMap((t) => {
    const d = t.databasePerRequest;
    return d ? [`| ${t.label} | ${d.commits} | ${d.rowsInserted} | ${d.rowsUpdated} | ${d.rowsFetched} |`] : [];
  });
  return [
    "| target | transactions per order | rows inserted | rows updated | rows fetched |",
    "|---|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}

export function goalTable(goal: GoalCheck[]): string {
  return [
    "| criterion | measured | verdict |",
    "|---|---|---|",
    ...goal.map((g) => `| ${g.criterion} | ${g.measured} | ${verdict(g.met)} |`),
  ].join("\n");
}

/** `orders-20261122T003000Z.json` (ISO 8601, basic format: no colons in a file name). */
export function resultsFileName(startedAt: string, benchmark = "orders"): string {
  return `${benchmark}-${startedAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")}.json`;
}

function generatedSection(results: BenchResults, file: string, extra: string[]): string {
  const m = results.machine;
  const s = results.settings;
  const remarks = results.targets.flatMap((t) => t.remarks.map((r) => `- ${t.label}: ${r}`));
  return [
    `Run of ${results.startedAt} — [\`results/${file}\`](results/${file}), code at \`${results.code.commit}\`${results.code.uncommittedChanges ? " with uncommitted changes" : ""}.`,
    "",
    `Machine: ${m.cpus}, ${m.memoryGB} GB RAM, ${m.os}, Node ${m.node}, ${m.postgres}, ${m.nats}; the load generator runs on the same machine.`,
    `Load: ${s.connections} connections, ${s.durationSeconds} s measured after a ${s.warmupSeconds} s warm-up; ${s.request}.`,
    `Cores busy outside each target's own processes during its measured window (others' work disturbs the figures): ${results.targets.map((t) => `${t.label.split(" ")[0]} ${coresOutside(t.cpu) ?? "?"}`).join(", ")}.`,
    "",
    resultsTable(results),
    "",
    'Where the CPU went during the measured window (user + system time from /proc; "postgres" is the backends serving the target\'s database):',
    "",
    cpuTable(results),
    "",
    "What PostgreSQL did per order (pg_stat_database of the target's database, measured window):",
    "",
    databaseTable(results),
    "",
    ...preloadSection(results),
    ...extra,
    "Against the target for (b):",
    "",
    goalTable(results.goal),
    ...(remarks.length > 0 ? ["", "Remarks:", "", ...remarks] : []),
  ].join("\n");
}

function preloadSection(results: BenchResults): string[] {
  const table = preloadTable(results);
  return table
    ? [
        "With --preload: the same load again once the database held that many more orders (SQL, bench/preload.ts), then the partner's first and 1001st page of GET /api/v1/orders (limit 50, keyset cursor), each under the same connections for the measured duration:",
        "",
        table,
        "",
      ]
    : [];
}

/** Intake on the fresh database against the preloaded one, and page 1001 against page 1. */
export function preloadTable(results: BenchResults): string | null {
  const rows = results.targets.flatMap((t) =>
    t.preloaded && t.figures ? [{ t, p: t.preloaded, fresh: t.figures }] : [],
  );
  if (rows.length === 0) return null;
  const rate = (f: LoadFigures | null) =>
    f ? `${f.requestsPerSecond.mean} req/s, p50 ${f.latencyMs.p50} ms, p99 ${f.latencyMs.p99} ms` : "–";
  return [
    "| target | preloaded orders (SQL, s, database size) | intake, fresh database | intake, preloaded | intake ratio (req/s; CPU ms per order, server side) | GET page 1 | GET page 1001 | page 1001 ÷ page 1 (req/s) |",
    "|---|---|---|---|---|---|---|---:|",
    ...rows.map(
      ({ t, p, fresh }) =>
        `| ${t.label} | ${p.preload.orders.toLocaleString("en")} (${p.preload.seconds} s, ${p.preload.databaseMB} MB) | ${rate(fresh)} | ${rate(p.intake)} | ` +
        `${ratio(p.intake.requestsPerSecond.mean, fresh.requestsPerSecond.mean)}; ${serverSideMs(t.cpu)} → ${serverSideMs(p.intakeCpu)} ms (${ratio(serverSideMs(p.intakeCpu), serverSideMs(t.cpu))}) | ${rate(p.firstPage)} | ${rate(p.deepPage)} | ` +
        `${p.deepPage && p.firstPage ? ratio(p.deepPage.requestsPerSecond.mean, p.firstPage.requestsPerSecond.mean) : "–"} |`,
    ),
  ].join("\n");
}

const START_MARK = "<!-- results:start (generated by npm run bench:orders) -->";
const END_MARK = "<!-- results:end -->";

/** Writes the JSON and refreshes the README's generated section; returns the JSON's path. */
/** `extra`: more sections of the README's generated part, before the goal (the batch run's table). */
export function writeResults(results: BenchResults, extra: string[] = []): string {
  const written = writeResultsFile(results.benchmark, results.startedAt, results);
  replaceReadmeSection(START_MARK, END_MARK, generatedSection(results, written.file, extra));
  return written.path;
}

/** bench/results/<benchmark>-<start time>.json; returns its file name and path. */
export function writeResultsFile(
  benchmark: string,
  startedAt: string,
  results: unknown,
): { file: string; path: string } {
  const dir = path.join(ROOT, "bench/results");
  mkdirSync(dir, { recursive: true });
  const file = resultsFileName(startedAt, benchmark);
  writeFileSync(path.join(dir, file), JSON.stringify(results, null, 2) + "\n");
  return { file, path: path.join(dir, file) };
}

/**
 * Replaces what lies between two markers of bench/README.md (the rest is written by hand and kept),
 * then formats the file with the house's formatter, so that a run leaves it as `prettier --check`
 * wants it (the generated tables are written unaligned).
 */
export function replaceReadmeSection(startMark: string, endMark: string, text: string): void {
  const readmePath = path.join(ROOT, "bench/README.md");
  const readme = readFileSync(readmePath, "utf8");
  const start = readme.indexOf(startMark);
  const end = readme.indexOf(endMark);
  if (start < 0 || end < start) throw new Error(`${readmePath} lacks the markers ${startMark} … ${endMark}`);
  writeFileSync(readmePath, readme.slice(0, start + startMark.length) + "\n" + text + "\n" + readme.slice(end));
  const prettier = path.join(ROOT, "node_modules/prettier/bin/prettier.cjs");
  execFileSync(process.execPath, [prettier, "--write", "--log-level=warn", readmePath], { stdio: "inherit" });
}
