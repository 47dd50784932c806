/**
 * One process's own count of something, read from its /metrics (Prometheus text format; values
 * are per process, docs/operations.md "Metrics"). A test that runs several processes reads each
 * one to show that the work really was shared, rather than trusting its title.
 */
import { sampleSum } from "../../bench/process-metrics";
import type { ServiceProcess } from "./processes";

/** The sum of the samples named `name` whose labels include `labels` (0 when there is none yet). */
export async function sampleTotal(
  target: ServiceProcess,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  // On the probe port: the gateway's public port has no /metrics by default (METRICS_ON_PUBLIC_PORT).
  const res = await fetch(`${target.probeUrl}/metrics`);
  if (res.status !== 200) throw new Error(`${target.options.name}: /metrics answered ${res.status}`);
  return sampleSum(await res.text(), name, labels);
}

/** Each process's count, in the order given, as `{ process name: count }` so that a failure names the idle one. */
export async function sampleTotalsByProcess(
  processes: ServiceProcess[],
  name: string,
  labels: Record<string, string> = {},
): Promise<Record<string, number>> {
  const totals = await Promise.all(processes.map((p) => sampleTotal(p, name, labels)));
  return Object.fromEntries(processes.map((p, i) => [p.options.name, totals[i]]));
}
