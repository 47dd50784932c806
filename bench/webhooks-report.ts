/**
 * What a webhooks benchmark run leaves behind: bench/results/webhooks-<start time>.json, and in
 * bench/README.md, between its own markers, the tables and the verdict against the targets of
 * issue 11 (WEBHOOK_GOAL).
 */
import type { CpuShare } from "./cpu-time";
import { OTHER_PREFIX, perUnit, WHOLE_MACHINE } from "./cpu-time";
import type { DatabaseCounters } from "./database-activity";
import type { CodeVersion, MachineDescription } from "./environment";
import type { ProcessMemory } from "./peak-rss";
import type { ProcessProfile } from "./profile-summary";
import {
  coresOutside,
  goalTable,
  NOTABLE_CORES,
  replaceReadmeSection,
  writeResultsFile,
  type GoalCheck,
} from "./report";
import type { DeliveryFigures, Percentiles } from "./webhooks-figures";

export type PhaseId = "burst" | "unordered" | "per_entity" | "steady" | "calm" | "noisy" | "baseline";

export interface ValidationFigures {
  sent: number;
  /** Answered 2xx: each one raises an event. */
  succeeded: number;
  statusCodes: Record<string, number>;
  /** Validations sent per second, first to last send (the offered load). */
  sentPerSecond: number;
  /** Validation round trips as the driver saw them. */
  answerMs: Percentiles;
}

export interface CpuPerDelivery {
  name: string;
  msPerDelivery: number;
  cores: number;
}

export interface PhaseResult {
  id: PhaseId;
  label: string;
  description: string;
  deliveries: DeliveryFigures | null;
  validations?: ValidationFigures;
  /** The baseline's senders: what they got back. */
  senders?: { sent: number; succeeded: number; statusCodes: Record<string, number> };
  /** The run database's counters during the phase, per delivery received (the service's phases). */
  databasePerDelivery?: DatabaseCounters;
  /** CPU time during the phase (from its first request to its last receipt), per delivery received. */
  cpu: CpuPerDelivery[];
  windowMs: number;
  /** The ordering phases: (order, subscription) lines whose first receipts broke version order. */
  linesOutOfOrder?: number;
  remarks: string[];
  error?: string;
}

export interface WebhooksBenchResults {
  benchmark: "webhooks";
  startedAt: string;
  finishedAt: string;
  code: CodeVersion;
  machine: MachineDescription;
  settings: {
    subscriptions: number;
    warmupOrders: number;
    /** Orders of five changes in each ordering phase (0 in runs from before they existed). */
    orderedOrders?: number;
    burstOrders: number;
    burstConnections: number;
    steadyRate: number;
    steadyOrders: number;
    calmRate: number;
    calmOrders: number;
    preload: number;
    webhooksProcesses: number;
    dispatchBatch: number;
    dispatchIntervalMs: number;
    baselineSenders: number;
    baselineInFlightPerSender: number;
    /** Unmeasured requests each sender sent first (500 in runs from before it was a setting). */
    baselineWarmupPerSender?: number;
  };
  /** Peak RSS of every process: the deployment's, the receiver's, the baseline's senders'. */
  processes: ProcessMemory[];
  phases: PhaseResult[];
  /**
   * Each warm-up round's CPU per delivery, sending side (a round: WARMUP_ROUND validations): whether V8
   * had settled before the burst. Absent in runs from before the warm-up was measured.
   */
  warmupCpuMsPerDelivery?: number[];
  /** Settled deliveries the database held before the phases (--preload). */
  preloadedDeliveries?: number;
  goal: GoalCheck[];
  /** With --cpu-prof: where each process's CPU went. */
  profile?: ProcessProfile[];
  remarks: string[];
  error?: string;
}

/** Issue 11's targets. */
export const WEBHOOK_GOAL = {
  minRateRatio: 0.3,
  maxCpuMs: 0.3,
  maxTransactions: 0.1,
  maxP50Ms: 50,
  maxP99Ms: 250,
  maxNoisyP50Ratio: 1.5,
  /** Issue 22: per_entity deliveries/s ≥ this × the unordered phase's. */
  minOrderedRateRatio: 0.8,
} as const;

/** The processes that do the receiving and the driving, not the sending: left out of "sending side" totals. */
export const NOT_SENDING = new Set(["receiver", "load generator"]);

export function cpuPerDelivery(shares: CpuShare[], deliveries: number, windowMs: number): CpuPerDelivery[] {
  return perUnit(shares, deliveries, windowMs).map(({ name, msPerUnit, cores }) => ({
    name,
    msPerDelivery: msPerUnit,
    cores,
  }));
}

const isOther = (c: { name: string }) => c.name.startsWith(OTHER_PREFIX);
const measuredParts = (cpu: CpuPerDelivery[]) => cpu.filter((c) => c.name !== WHOLE_MACHINE && !isOther(c));

/** CPU per delivery of the sending side: the service's processes, PostgreSQL and NATS — or the baseline's senders. */
export function sendingSideMs(cpu: CpuPerDelivery[]): number {
  return (
    Math.round(
      measuredParts(cpu)
        .filter((c) => !NOT_SENDING.has(c.name))
        .reduce((sum, c) => sum + c.msPerDelivery, 0) * 100,
    ) / 100
  );
}

const round = (n: number) => Math.round(n * 10) / 10;

function rateCheck(burst: DeliveryFigures | null, baseline: DeliveryFigures | null): GoalCheck {
  const measured = burst !== null && baseline !== null && baseline.perSecond > 0;
  const g = WEBHOOK_GOAL.minRateRatio;
  return {
    criterion: `burst: deliveries/s ≥ ${g} × the baseline's (same run)`,
    measured: measured
      ? `${burst.perSecond} vs ${g} × ${baseline.perSecond} = ${round(g * baseline.perSecond)} (ratio ${(burst.perSecond / baseline.perSecond).toFixed(2)})`
      : "not measured",
    met: measured ? burst.perSecond >= g * baseline.perSecond : null,
  };
}

function costChecks(burst: PhaseResult | undefined): GoalCheck[] {
  const cpu = burst && burst.cpu.length > 0 ? sendingSideMs(burst.cpu) : null;
  const transactions = burst?.databasePerDelivery?.commits ?? null;
  return [
    {
      criterion: `burst: CPU per delivery, sending side (services + PostgreSQL + NATS) ≤ ${WEBHOOK_GOAL.maxCpuMs} ms`,
      measured: cpu === null ? "not measured" : `${cpu} ms`,
      met: cpu === null ? null : cpu <= WEBHOOK_GOAL.maxCpuMs,
    },
    {
      criterion: `burst: PostgreSQL transactions per delivery ≤ ${WEBHOOK_GOAL.maxTransactions} (the validations' own included)`,
      measured: transactions === null ? "not measured" : String(transactions),
      met: transactions === null ? null : transactions <= WEBHOOK_GOAL.maxTransactions,
    },
  ];
}

function steadyCheck(steadyPhase: PhaseResult | undefined, steadyRate: number): GoalCheck {
  const steady = steadyPhase?.deliveries ?? null;
  const offered = steadyPhase?.validations?.sentPerSecond;
  const perValidation =
    steady && steadyPhase?.validations ? steady.expected / Math.max(1, steadyPhase.validations.succeeded) : null;
  const offeredDeliveries = offered !== undefined && perValidation !== null ? round(offered * perValidation) : null;
  return {
    criterion: `steady: p50 event-to-receipt latency < ${WEBHOOK_GOAL.maxP50Ms} ms, p99 < ${WEBHOOK_GOAL.maxP99Ms} ms at ${steadyRate} validated orders/s`,
    measured: steady?.latencyMs
      ? `p50 ${steady.latencyMs.p50} ms, p99 ${steady.latencyMs.p99} ms; validations sent at ${offered ?? "?"}/s, so ${offeredDeliveries ?? "?"} deliveries/s offered, ${steady.perSecond}/s delivered`
      : "not measured",
    met: steady?.latencyMs
      ? steady.latencyMs.p50 < WEBHOOK_GOAL.maxP50Ms && steady.latencyMs.p99 < WEBHOOK_GOAL.maxP99Ms
      : null,
  };
}

function orderingCheck(unordered: PhaseResult | undefined, perEntity: PhaseResult | undefined): GoalCheck {
  const [u, o] = [unordered?.deliveries, perEntity?.deliveries];
  const measured = u && o && u.perSecond > 0;
  const g = WEBHOOK_GOAL.minOrderedRateRatio;
  return {
    criterion: `per_entity (orders of 5 events): deliveries/s ≥ ${g} × the unordered phase's (same run), every line in version order`,
    measured: measured
      ? `${o.perSecond} vs ${g} × ${u.perSecond} = ${round(g * u.perSecond)} (ratio ${(o.perSecond / u.perSecond).toFixed(2)}); lines out of order: ${perEntity?.linesOutOfOrder ?? "?"} (unordered: ${unordered?.linesOutOfOrder ?? "?"}); missing ${o.missing}`
      : "not measured",
    met: measured ? o.perSecond >= g * u.perSecond && perEntity?.linesOutOfOrder === 0 && o.missing === 0 : null,
  };
}

function noisyCheck(calm: DeliveryFigures | null, noisy: DeliveryFigures | null, calmRate: number): GoalCheck {
  const measured = calm?.latencyMs && noisy?.latencyMs;
  const g = WEBHOOK_GOAL.maxNoisyP50Ratio;
  return {
    criterion: `noisy neighbour at ${calmRate} validations/s: the healthy subscribers' p50 ≤ ${g} × all-healthy (calm), none of theirs missing`,
    measured: measured
      ? `p50 ${noisy.latencyMs?.p50} ms vs ${calm.latencyMs?.p50} ms (${((noisy.latencyMs?.p50 ?? 0) / Math.max(1, calm.latencyMs?.p50 ?? 1)).toFixed(2)} ×), p99 ${noisy.latencyMs?.p99} vs ${calm.latencyMs?.p99} ms; missing ${noisy.missing}`
      : "not measured",
    met: measured
      ? (noisy.latencyMs?.p50 ?? 0) <= g * Math.max(1, calm.latencyMs?.p50 ?? 0) && noisy.missing === 0
      : null,
  };
}

export function checkWebhookGoal(
  phases: PhaseResult[],
  settings: { steadyRate: number; calmRate: number },
): GoalCheck[] {
  const phase = (id: PhaseId) => phases.find((p) => p.id === id);
  const figures = (id: PhaseId) => phase(id)?.deliveries ?? null;
  const service = (["burst", "steady", "calm"] as const).map(figures).filter((d): d is DeliveryFigures => d !== null);
  return [
    rateCheck(figures("burst"), figures("baseline")),
    ...costChecks(phase("burst")),
    steadyCheck(phase("steady"), settings.steadyRate),
    noisyCheck(figures("calm"), figures("noisy"), settings.calmRate),
    orderingCheck(phase("unordered"), phase("per_entity")),
    {
      criterion: "every expected delivery arrived (burst, steady, calm)",
      measured:
        service.length === 3
          ? `missing: ${service.map((d) => d.missing).join(", ")}; duplicates (same webhook-id again, allowed by at-least-once): ${service.map((d) => d.duplicates).join(", ")}`
          : "not measured",
      met: service.length === 3 ? service.every((d) => d.missing === 0) : null,
    },
  ];
}

function validationCell(v: ValidationFigures | undefined): string {
  if (!v) return "–";
  const failed = v.sent - v.succeeded;
  return `${v.sentPerSecond}/s sent; answer p50 ${v.answerMs.p50}, p99 ${v.answerMs.p99} ms${failed > 0 ? `; ${failed} failed` : ""}`;
}

export function phasesTable(phases: PhaseResult[]): string {
  const rows = phases.map((p) => {
    const d = p.deliveries;
    if (!d) return `| ${p.label} | failed: ${p.error ?? "no figures"} | | | | | | | | |`;
    const l = d.latencyMs;
    const latency = l ? `${l.p50} | ${l.p99} | ${l.max}` : "– | – | –";
    return `| ${p.label} | ${d.received} / ${d.expected} | ${d.perSecond} (${(d.firstToLastMs / 1000).toFixed(2)} s) | ${latency} | ${d.duplicates} | ${d.missing} | ${validationCell(p.validations)} | ${sendingSideMs(p.cpu)} |`;
  });
  return [
    "| phase | deliveries received / expected | deliveries/s (first to last receipt, in s) | latency p50 (ms) | p99 (ms) | max (ms) | duplicates | missing | validations | CPU ms per delivery, sending side |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ...rows,
  ].join("\n");
}

export function cpuDetailTable(phases: PhaseResult[], cores: number): string {
  const rows = phases
    .filter((p) => p.cpu.length > 0)
    .map((p) => {
      const parts = measuredParts(p.cpu)
        .map((c) => `${c.name} ${c.msPerDelivery} (${c.cores})`)
        .join(", ");
      const machine = p.cpu.find((c) => c.name === WHOLE_MACHINE);
      const others =
        p.cpu
          .filter((c) => isOther(c) && c.cores >= NOTABLE_CORES)
          .map((c) => `${c.name.slice(OTHER_PREFIX.length)} ${c.cores}`)
          .join(", ") || "–";
      return `| ${p.label} | ${parts} | ${machine ? `${machine.cores} of ${cores}` : "–"} | ${coresOutside(p.cpu) ?? "?"} | ${others} |`;
    });
  return [
    "| phase | per process: CPU ms per delivery (cores busy) | whole machine: cores busy | cores busy outside the measured processes | busiest other processes: cores |",
    "|---|---|---:|---:|---|",
    ...rows,
  ].join("\n");
}

export function databaseTable(phases: PhaseResult[]): string {
  const rows = phases.flatMap((p) => {
    const d = p.databasePerDelivery;
    return d ? [`| ${p.label} | ${d.commits} | ${d.rowsInserted} | ${d.rowsUpdated} | ${d.rowsFetched} |`] : [];
  });
  return [
    "| phase | transactions per delivery | rows inserted | rows updated | rows fetched |",
    "|---|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}

/** The warm-up rounds' CPU per delivery, for the protocol line. */
function warmupCurve(r: WebhooksBenchResults): string {
  const rounds = r.warmupCpuMsPerDelivery ?? [];
  return rounds.length > 0 ? ` (sending-side CPU ms per delivery, round by round: ${rounds.join(", ")})` : "";
}

function generatedSection(r: WebhooksBenchResults, file: string): string {
  const m = r.machine;
  const s = r.settings;
  const remarks = [...r.remarks, ...r.phases.flatMap((p) => p.remarks.map((x) => `${p.label}: ${x}`))];
  const memory = r.processes.map((p) => `${p.name} ${p.peakRssMB}`).join(", ") || "–";
  return [
    `Run of ${r.startedAt} — [\`results/${file}\`](results/${file}), code at \`${r.code.commit}\`${r.code.uncommittedChanges ? " with uncommitted changes" : ""}.`,
    "",
    `Machine: ${m.cpus}, ${m.memoryGB} GB RAM, ${m.os}, Node ${m.node}, ${m.postgres}, ${m.nats}; the driver and the receiver run on the same machine.`,
    `Protocol: ${s.webhooksProcesses} webhooks processes (WEBHOOK_DISPATCH_BATCH=${s.dispatchBatch}, WEBHOOK_DISPATCH_INTERVAL_MS=${s.dispatchIntervalMs}), ${s.subscriptions} subscriptions to \`sales_order_validated\`; ` +
      `each on an origin of its own (one port of the receiver); ${r.preloadedDeliveries ? `the database held ${r.preloadedDeliveries} settled deliveries beforehand (--preload); ` : ""}` +
      `${s.warmupOrders} validations to warm up${warmupCurve(r)}; burst: ${s.burstOrders} validations over ${s.burstConnections} connections; steady: ${s.steadyOrders} validations at ${s.steadyRate}/s; ` +
      `calm: ${s.calmOrders} at ${s.calmRate}/s; noisy: ${s.calmOrders} at ${s.calmRate}/s with the last subscriber's origin hanging (accepts, never answers; WEBHOOK_TIMEOUT_MS at its default); ` +
      `baseline: ${s.baselineSenders} sender processes × ${s.baselineInFlightPerSender} requests in flight, after ${s.baselineWarmupPerSender ?? 500} unmeasured requests each.`,
    ...(r.error ? ["", `**The run failed:** ${r.error}`] : []),
    "",
    phasesTable(r.phases),
    "",
    'Where the CPU went in each phase (user + system time from /proc, divided by the deliveries received; "postgres" is the backends serving the run\'s database, "load generator" the driver):',
    "",
    cpuDetailTable(r.phases, m.cores),
    "",
    "What PostgreSQL did per delivery (pg_stat_database of the run's database, over the phase; the validations' own transactions included):",
    "",
    databaseTable(r.phases),
    "",
    `Peak RSS per process (MB, whole life): ${memory}.`,
    "",
    "Against the targets:",
    "",
    goalTable(r.goal),
    ...(remarks.length > 0 ? ["", "Remarks:", "", ...remarks.map((x) => `- ${x}`)] : []),
  ].join("\n");
}

const START_MARK = "<!-- webhooks-results:start (generated by npm run bench:webhooks) -->";
const END_MARK = "<!-- webhooks-results:end -->";

/** Writes the JSON and refreshes the README's webhooks section; returns the JSON's path. */
export function writeWebhookResults(results: WebhooksBenchResults): string {
  const written = writeResultsFile("webhooks", results.startedAt, results);
  replaceReadmeSection(START_MARK, END_MARK, generatedSection(results, written.file));
  return written.path;
}

/** The console's summary: the same tables. */
export function consoleSummary(results: WebhooksBenchResults): string {
  return [
    phasesTable(results.phases),
    cpuDetailTable(results.phases, results.machine.cores),
    databaseTable(results.phases),
    goalTable(results.goal),
  ].join("\n\n");
}
