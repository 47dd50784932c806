/**
 * What the soak (soak.bench.ts) keeps as it goes and reports per window: the journeys of the
 * orders it offered (intake answer, validation answer), the receipts at the receiver, the
 * processes' resident memory, and the storage's sizes. Pure bookkeeping, no I/O.
 */
import type { Percentiles } from "./webhooks-figures";
import type { ReceivedRequest } from "./webhook-sink-client";
import type { StreamSize } from "./nats-namespace";
import type { ProcessWindow } from "./process-metrics";
import type { ServerIo } from "./database-activity";

/** One order offered: created (intake), then validated, which makes one delivery per subscription. */
export interface Journey {
  sentAt: number;
  intakeStatus: number;
  intakeMs: number;
  /** The order's code once validated; null when the intake or the validation failed. */
  code: string | null;
  validateStatus: number | null;
  validatedAt: number | null;
}

export interface TableSize {
  table: string;
  totalMB: number;
  indexesMB: number;
  liveRows: number;
  deadRows: number;
  autovacuums: number;
}

export interface WindowFigures {
  window: number;
  /** Minutes since the soak began, at the window's end. */
  endsAtMinute: number;
  offered: number;
  intakeMs: Percentiles;
  /** Orders or validations answered other than 2xx, or not answered. */
  errors: number;
  receipts: number;
  eventToReceiptMs: Percentiles;
  /** The same, on the healthy receivers only (the flaky one's retries wait 1 s and more). */
  healthyEventToReceiptMs: Percentiles;
  /** Each process's resident memory at the window's end, MB. */
  rssMB: Record<string, number>;
  /** What each process spent in the window, from its /metrics (absent in results of before 2026-11-27T17Z). */
  processes?: Record<string, ProcessWindow>;
  /** What PostgreSQL read and wrote in the window (absent in results of before 2026-11-27T17Z). */
  serverIo?: ServerIo | null;
  tables: TableSize[];
  streams: StreamSize[];
}

/** The receipts so far: the first of each (order code, path) counts; later ones are duplicates. */
export class Receipts {
  private readonly seen = new Map<string, Set<string>>();
  duplicates = 0;
  /** Receipts whose validation answer the driver had not seen yet: counted when it has. */
  private waiting: ReceivedRequest[] = [];

  /** Adds the receiver's new records; resolves to the event-to-receipt latencies of the first receipts among them. */
  add(records: ReceivedRequest[], validatedAt: Map<string, number>, failingPath: string) {
    const all: number[] = [];
    const healthy: number[] = [];
    const later: ReceivedRequest[] = [];
    for (const r of [...this.waiting, ...records]) {
      if (!r.code) continue;
      const answered = validatedAt.get(r.code);
      if (answered === undefined) {
        later.push(r);
        continue;
      }
      const paths = this.seen.get(r.code) ?? new Set<string>();
      this.seen.set(r.code, paths);
      if (paths.has(r.path)) {
        this.duplicates++;
        continue;
      }
      paths.add(r.path);
      all.push(r.at - answered);
      if (r.path !== failingPath) healthy.push(r.at - answered);
    }
    this.waiting = later;
    return { all, healthy };
  }

  /** The (code, path) pairs expected and not received. */
  missing(codes: string[], paths: string[]): string[] {
    return codes.flatMap((code) => paths.filter((p) => !this.seen.get(code)?.has(p)).map((p) => `${code} ${p}`));
  }
}

/** Least-squares slope of (time ms, MB) samples, in MB per hour; 0 with fewer than two samples. */
export function slopeMBPerHour(samples: [number, number][]): number {
  if (samples.length < 2) return 0;
  const n = samples.length;
  const mx = samples.reduce((s, [x]) => s + x, 0) / n;
  const my = samples.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = samples.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  if (sxx === 0) return 0;
  const sxy = samples.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  return Math.round((sxy / sxx) * 3_600_000 * 10) / 10;
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** The markdown the soak prints (and that bench/README.md records). */
export function soakTables(windows: WindowFigures[], slopes: Record<string, number>): string {
  const processes = Object.keys(slopes);
  const head = [
    "| window | ends at (min) | orders offered | intake p50 / p99 (ms) | errors | receipts | event-to-receipt p50 / p99 (ms) | healthy receivers p50 / p99 (ms) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...windows.map(
      (w) =>
        `| ${w.window} | ${w.endsAtMinute} | ${w.offered} | ${w.intakeMs.p50} / ${w.intakeMs.p99} | ${w.errors} | ${w.receipts} | ${w.eventToReceiptMs.p50} / ${w.eventToReceiptMs.p99} | ${w.healthyEventToReceiptMs.p50} / ${w.healthyEventToReceiptMs.p99} |`,
    ),
  ];
  const rss = [
    `| window | ${processes.join(" | ")} |`,
    `|---|${processes.map(() => "---:").join("|")}|`,
    ...windows.map((w) => `| ${w.window} | ${processes.map((p) => w.rssMB[p] ?? "–").join(" | ")} |`),
    `| **slope, MB/h** | ${processes.map((p) => slopes[p]).join(" | ")} |`,
  ];
  const storage = [
    "| window | tables + indexes (MB) | of which indexes (MB) | live rows | dead rows | autovacuum runs (total) | JetStream messages | JetStream MB |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...windows.map((w) => {
      const sum = (f: (t: TableSize) => number) => Math.round(w.tables.reduce((s, t) => s + f(t), 0) * 10) / 10;
      return `| ${w.window} | ${sum((t) => t.totalMB)} | ${sum((t) => t.indexesMB)} | ${sum((t) => t.liveRows)} | ${sum((t) => t.deadRows)} | ${sum((t) => t.autovacuums)} | ${w.streams.reduce((s, x) => s + x.messages, 0)} | ${mb(w.streams.reduce((s, x) => s + x.bytes, 0))} |`;
    }),
  ];
  const last = windows.at(-1);
  const biggest = last
    ? [
        "| table (last window) | MB | indexes MB | live rows | dead rows | autovacuums |",
        "|---|---:|---:|---:|---:|---:|",
        ...[...last.tables]
          .sort((a, b) => b.totalMB - a.totalMB)
          .slice(0, 8)
          .map(
            (t) => `| ${t.table} | ${t.totalMB} | ${t.indexesMB} | ${t.liveRows} | ${t.deadRows} | ${t.autovacuums} |`,
          ),
      ]
    : [];
  const spent = windows.some((w) => w.processes)
    ? [
        `| window: event-loop delay p99 ms / GC s (major) / CPU s | ${processes.join(" | ")} |`,
        `|---|${processes.map(() => "---:").join("|")}|`,
        ...windows.map(
          (w) =>
            `| ${w.window} | ${processes
              .map((p) => {
                const f = w.processes?.[p];
                return f ? `${f.loopDelayP99Ms} / ${f.gcSeconds} (${f.majorGcSeconds}) / ${f.cpuSeconds}` : "–";
              })
              .join(" | ")} |`,
        ),
      ]
    : [];
  const io = windows.some((w) => w.serverIo)
    ? [
        "| window | blocks read (outside shared_buffers) | cache hits % | WAL MB | full-page images | checkpoints | pages written by checkpoints / by backends |",
        "|---|---:|---:|---:|---:|---:|---:|",
        ...windows.map((w) => {
          const s = w.serverIo;
          return s
            ? `| ${w.window} | ${s.blocksRead} | ${s.cacheHitPercent} | ${s.walMB} | ${s.walFullPageImages} | ${s.checkpoints} | ${s.buffersCheckpoint} / ${s.buffersBackend} |`
            : `| ${w.window} | – | – | – | – | – | – |`;
        }),
      ]
    : [];
  return [head, rss, spent, storage, io, biggest]
    .filter((t) => t.length > 0)
    .map((t) => t.join("\n"))
    .join("\n\n");
}
