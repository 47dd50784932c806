/**
 * `npm run bench:import [-- --lines 100000 --targets embedded,distributed]`: a background import
 * (POST /api/v1/order_imports) of `--lines` generated orders, in the embedded mode (one process,
 * PGlite) and the distributed one (a process per service over NATS, PostgreSQL): the upload's
 * time, the whole import's time and orders per second, and the peak RSS of every process. The
 * NDJSON body is generated as a stream and sent as one (never held whole, here either).
 * Needs PostgreSQL and NATS for the distributed mode (BENCH_DATABASE_URL / TEST_DATABASE_URL,
 * TEST_NATS_URL, else the local servers).
 */
import http from "node:http";
import os from "node:os";
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { orderPayload } from "./order-payload";
import { PeakRss } from "./peak-rss";
import { TARGETS, type Deployment } from "./targets";
import type { BenchOptions, TargetId } from "./options";

const { values } = parseArgs({
  options: {
    lines: { type: "string", default: "100000" },
    targets: { type: "string", default: "embedded,distributed" },
  },
});
const lines = Number(values.lines);
const targets = values.targets.split(",") as TargetId[];

const options: BenchOptions = {
  connections: 1,
  durationSeconds: 0,
  warmupSeconds: 0,
  targets,
  postgresUrl:
    process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  natsUrl: process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222",
  write: false,
  cpuProfile: false,
  preload: 0,
  batch: 0,
};

/**
 * bench:orders' order with two items instead of three: 100,000 of them (~470 bytes each) fit the
 * import's 50 MiB, which 100,000 of ~540 bytes do not.
 */
const ITEMS_PER_LINE = 2;

function importLine(deployment: Deployment, externalId: string): string {
  const order = JSON.parse(orderPayload(deployment.partner.references, externalId)) as { items: unknown[] };
  return JSON.stringify({ ...order, items: order.items.slice(0, ITEMS_PER_LINE) });
}

/** The NDJSON body, generated line by line as the request asks for more. */
function ndjsonBody(deployment: Deployment, run: string): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < lines; i += 500) {
        let text = "";
        for (let j = i; j < Math.min(lines, i + 500); j++) text += importLine(deployment, `import-${run}-${j}`) + "\n";
        yield text;
      }
    })(),
  );
}

function upload(deployment: Deployment, run: string): Promise<{ status: number; location: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${deployment.baseUrl}/api/v1/order_imports`, {
      method: "POST",
      headers: { Authorization: `Bearer ${deployment.partner.apiKey}`, "Content-Type": "application/x-ndjson" },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, location: String(res.headers.location), text }));
    });
    req.on("error", reject);
    ndjsonBody(deployment, run).pipe(req);
  });
}

interface ImportState {
  status: string;
  processed: number;
  created: number;
  rejected: number;
  duplicates: number;
}

async function state(deployment: Deployment, location: string): Promise<ImportState> {
  const res = await fetch(`${deployment.baseUrl}${location}`, {
    headers: { Authorization: `Bearer ${deployment.partner.apiKey}` },
  });
  return (await res.json()) as ImportState;
}

async function measure(target: TargetId): Promise<void> {
  const run = randomBytes(4).toString("hex");
  const deployment = await TARGETS[target].deploy({ options, runId: run, nodeArgs: [] });
  const memory = new PeakRss(deployment.processes);
  try {
    const loadBefore = os.loadavg();
    const started = Date.now();
    const answer = await upload(deployment, run);
    const uploadedMs = Date.now() - started;
    if (answer.status !== 202) throw new Error(`upload answered ${answer.status}: ${answer.text}`);
    const location = answer.location.replace(/^https?:\/\/[^/]+/, "");
    let last: ImportState;
    do {
      await new Promise((r) => setTimeout(r, 500));
      last = await state(deployment, location);
    } while (last.status === "queued" || last.status === "running");
    const totalMs = Date.now() - started;
    const peaks = memory.finish();
    console.log(
      JSON.stringify(
        {
          target: TARGETS[target].label,
          lines,
          itemsPerOrder: ITEMS_PER_LINE,
          uploadSeconds: uploadedMs / 1000,
          totalSeconds: totalMs / 1000,
          ordersPerSecond: Math.round((last.created / totalMs) * 1000),
          ordersPerSecondAfterUpload: Math.round((last.created / (totalMs - uploadedMs)) * 1000),
          result: last,
          peakRssMB: Object.fromEntries(peaks.map((p) => [p.name, p.peakRssMB])),
          loadAverage: { before: loadBefore, after: os.loadavg() },
        },
        null,
        2,
      ),
    );
  } catch (err) {
    for (const p of deployment.processes) console.error(`--- ${p.name} (alive: ${p.alive}) ---\n${p.output()}`);
    throw err;
  } finally {
    memory.finish();
    await deployment.tearDown();
  }
}

async function main(): Promise<void> {
  for (const target of targets) await measure(target);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
