/**
 * The batch run of bench:orders (issue 24): after a target's single-order run, the same order
 * sent `--batch` at a time (100 by default) through POST /api/v1/orders/batch, all or none,
 * each with its own externalId, for the same duration; then orders a second and CPU per order
 * beside the single-order figures of the same run. Fewer connections (a tenth): each request
 * carries 100 orders, so as many orders are in flight as with the single-order run's 50
 * connections of one order, and more.
 */
import { CpuWindow, deploymentGroups, perUnit } from "./cpu-time";
import { postBatches, type LoadSettings } from "./load";
import { serverSideMs, type BatchRun, type BenchResults } from "./report";
import type { Deployment, RunContext } from "./targets";

/** The goal: batches take orders at least this many times as fast as single POSTs. */
export const BATCH_GOAL_RATIO = 4;

export function batchConnections(connections: number): number {
  return Math.max(1, Math.round(connections / 10));
}

export async function measureBatches(
  deployment: Deployment,
  run: RunContext,
  settings: LoadSettings,
  log: (line: string) => void,
): Promise<BatchRun> {
  const size = run.options.batch;
  const connections = batchConnections(settings.connections);
  const { baseUrl, partner } = deployment;
  if (settings.warmupSeconds > 0) await postBatches(baseUrl, partner, connections, settings.warmupSeconds, size);
  log(`batches of ${size}: ${settings.durationSeconds} s at ${connections} connections`);
  const cpu = CpuWindow.start(deploymentGroups(deployment, run.options.postgresUrl));
  const figures = await postBatches(baseUrl, partner, connections, settings.durationSeconds, size);
  const orders = (figures.statusCodes["200"] ?? 0) * size;
  const shares = perUnit(await cpu.finish(), orders, figures.durationSeconds * 1000);
  return {
    size,
    connections,
    figures,
    ordersPerSecond: Math.round((orders / figures.durationSeconds) * 10) / 10,
    cpu: shares.map(({ name, msPerUnit, cores }) => ({ name, msPerRequest: msPerUnit, cores })),
  };
}

/** Single POSTs against batches, per target, in orders a second and server-side CPU per order. */
export function batchTable(results: BenchResults): string | null {
  const rows = results.targets.flatMap((t) => {
    const b = t.batch;
    if (!b || !t.figures) return [];
    const single = t.figures.requestsPerSecond.mean;
    const ratio = single > 0 ? Math.round((b.ordersPerSecond / single) * 10) / 10 : 0;
    const non2xx = b.figures.non2xx + b.figures.errors;
    return [
      `| ${t.label} | ${single} | ${b.ordersPerSecond} (${b.figures.requestsPerSecond.mean} req/s, p99 ${b.figures.latencyMs.p99} ms) | **${ratio} ×** ${ratio >= BATCH_GOAL_RATIO ? "met" : "not met"} | ${serverSideMs(t.cpu)} | ${serverSideMs(b.cpu)} | ${non2xx} |`,
    ];
  });
  if (rows.length === 0) return null;
  return [
    `| target | single POST: orders/s | batches: orders/s | ratio (goal ≥ ${BATCH_GOAL_RATIO} ×) | CPU ms per order, single | CPU ms per order, batch | batch non-2xx + errors |`,
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}

/** The README's section for the batch run, when there was one. */
export function batchSection(results: BenchResults): string[] {
  const table = batchTable(results);
  if (!table) return [];
  const t = results.targets.find((x) => x.batch)!;
  return [
    `Batch intake: the same order, ${t.batch!.size} a request through POST /api/v1/orders/batch (reject_all), at ${t.batch!.connections} connections, right after each target's single-order run (CPU: the target's own processes and its PostgreSQL backends, per order taken):`,
    "",
    table,
    "",
  ];
}
