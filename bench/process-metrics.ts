/**
 * What each process of a run spent in a window, read from its own /metrics (prom-client's
 * default metrics, shared/observability/metrics.ts): CPU seconds, garbage collection seconds
 * (all kinds, and the major collections alone), the event loop's delay p99, and the heap in use.
 * It says which process a drift in the latencies comes from, and whether its time went to the
 * collector or to work.
 *
 * prom-client resets its event-loop delay histogram at each scrape, so the p99 read here is
 * the window's own, as long as nothing else scrapes the process meanwhile (in a bench nothing
 * does).
 */

export interface ProcessWindow {
  cpuSeconds: number;
  gcSeconds: number;
  majorGcSeconds: number;
  loopDelayP99Ms: number;
  heapUsedMB: number;
}

interface Totals {
  cpu: number;
  gc: number;
  majorGc: number;
}

/** `name{a="1",b="2"} 7` → its name, labels and value; null for a comment or a blank line. */
function parseSample(line: string): { name: string; labels: Record<string, string>; value: number } | null {
  const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
  if (!match) return null;
  const labels = Object.fromEntries(
    [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
  );
  return { name: match[1], labels, value: Number(match[3]) };
}

/**
 * The sum of the samples named `name` in a /metrics text (Prometheus text format) whose labels
 * include `labels` (`{ kind: "major" }`); 0 when there is none. Also what the tests read a
 * process's counters with (test/helpers/process-metrics.ts).
 */
export function sampleSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const sample = parseSample(line);
    if (!sample || sample.name !== name) continue;
    if (!Object.entries(labels).every(([k, v]) => sample.labels[k] === v)) continue;
    if (Number.isFinite(sample.value)) sum += sample.value;
  }
  return sum;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Scrapes each process at each window's end; the counters' figures are the window's increase. */
export class ProcessMetrics {
  private previous = new Map<string, Totals>();

  /** `urls`: process name → its /metrics. */
  constructor(private readonly urls: ReadonlyMap<string, string>) {}

  /** The figures since the last call (since the process started, for the first). */
  async take(): Promise<Record<string, ProcessWindow>> {
    const figures: Record<string, ProcessWindow> = {};
    await Promise.all(
      [...this.urls].map(async ([name, url]) => {
        const text = await fetch(url, { signal: AbortSignal.timeout(10_000) })
          .then((r) => (r.ok ? r.text() : null))
          .catch(() => null);
        if (text === null) return;
        const now: Totals = {
          cpu: sampleSum(text, "process_cpu_seconds_total"),
          gc: sampleSum(text, "nodejs_gc_duration_seconds_sum"),
          majorGc: sampleSum(text, "nodejs_gc_duration_seconds_sum", { kind: "major" }),
        };
        const before = this.previous.get(name) ?? { cpu: 0, gc: 0, majorGc: 0 };
        this.previous.set(name, now);
        figures[name] = {
          cpuSeconds: round(now.cpu - before.cpu, 1),
          gcSeconds: round(now.gc - before.gc, 2),
          majorGcSeconds: round(now.majorGc - before.majorGc, 2),
          loopDelayP99Ms: round(sampleSum(text, "nodejs_eventloop_lag_p99_seconds") * 1000, 1),
          heapUsedMB: round(sampleSum(text, "nodejs_heap_size_used_bytes") / 1048576, 1),
        };
      }),
    );
    return figures;
  }
}
