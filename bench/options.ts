/**
 * The benchmark's command line. The defaults are the issue's protocol (50 connections, 20 s);
 * shorter runs are for trying the benchmark out and write nothing unless asked.
 *
 *   node dist/bench/orders.bench.js [--duration 20] [--warmup 5] [--connections 50]
 *     [--targets embedded,embedded-postgres,distributed,baseline] [--postgres URL] [--nats URL] [--no-write] [--cpu-prof]
 *     [--preload 1000000]
 *
 * `--cpu-prof` runs the processes under test with V8's sampling profiler and prints where each
 * one's CPU went; profiled figures are slower than real ones, so it writes nothing.
 * `--preload N` measures each PostgreSQL target twice: on its fresh database, then again once N
 * orders were added with SQL (bench/preload.ts), with the partner's first and 1001st page.
 */
import { parseArgs } from "node:util";

export const TARGET_IDS = ["embedded", "embedded-postgres", "distributed", "baseline"] as const;
export type TargetId = (typeof TARGET_IDS)[number];

export interface BenchOptions {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  targets: TargetId[];
  /** A PostgreSQL server URL (any database on it; fresh databases are created beside it). */
  postgresUrl: string;
  natsUrl: string;
  /** Write bench/results/*.json and the README table. */
  write: boolean;
  cpuProfile: boolean;
  /** Orders to add with SQL before a second measured run (0: none). */
  preload: number;
  /** Orders per POST /orders/batch of the batch run after the single-order one (0: no batch run). */
  batch: number;
}

export class UsageError extends Error {}

/** The benchmark only ever talks to this machine. */
export const LOOPBACK = "127.0.0.1";

export function loopbackUrl(flag: string, text: string, protocols: string[]): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--${flag} is not a URL: ${text}`);
  }
  if (!protocols.includes(url.protocol)) throw new UsageError(`--${flag} must start with ${protocols.join(" or ")}`);
  if (url.hostname !== LOOPBACK) throw new UsageError(`--${flag} must point at ${LOOPBACK}, got ${url.hostname}`);
  return text;
}

/** The servers every benchmark talks to, from its --postgres and --nats (both on this machine). */
export function serverUrls(values: { postgres: string; nats: string }): { postgresUrl: string; natsUrl: string } {
  return {
    postgresUrl: loopbackUrl("postgres", values.postgres, ["postgres:", "postgresql:"]),
    natsUrl: loopbackUrl("nats", values.nats, ["nats:"]),
  };
}

export function positiveInteger(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${flag} must be a whole number of at least ${min}, got ${text}`);
  return n;
}

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      connections: { type: "string", default: "50" },
      duration: { type: "string", default: "20" },
      warmup: { type: "string", default: "5" },
      targets: { type: "string", default: TARGET_IDS.join(",") },
      postgres: { type: "string", default: `postgres://postgres@${LOOPBACK}:5432/postgres` },
      nats: { type: "string", default: `nats://${LOOPBACK}:4222` },
      "no-write": { type: "boolean", default: false },
      "cpu-prof": { type: "boolean", default: false },
      preload: { type: "string", default: "0" },
      batch: { type: "string", default: "100" },
    },
    strict: true,
  });
  const targets = values.targets
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  const unknown = targets.filter((t) => !(TARGET_IDS as readonly string[]).includes(t));
  if (unknown.length > 0 || targets.length === 0)
    throw new UsageError(`--targets takes some of ${TARGET_IDS.join(", ")}; got ${values.targets}`);
  const preload = positiveInteger("preload", values.preload, 0);
  // PGlite's folder is the running process's alone: nothing else may open it to add rows.
  if (preload > 0 && targets.includes("embedded"))
    throw new UsageError(
      "--preload needs PostgreSQL: leave out the embedded target (PGlite's folder is held by its process)",
    );
  return {
    connections: positiveInteger("connections", values.connections, 1),
    durationSeconds: positiveInteger("duration", values.duration, 1),
    warmupSeconds: positiveInteger("warmup", values.warmup, 0),
    // In the protocol's order, whatever order they were named in.
    targets: TARGET_IDS.filter((t) => targets.includes(t)),
    ...serverUrls(values),
    write: !values["no-write"] && !values["cpu-prof"],
    cpuProfile: values["cpu-prof"],
    preload,
    batch: Math.min(positiveInteger("batch", values.batch, 0), 500),
  };
}
