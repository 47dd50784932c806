/**
 * `npm run bench:fanout-cost` (issue 23): what an event nobody subscribed to costs the webhooks
 * process. The distributed mode (one webhooks process), no subscription at all; the webhooks
 * process's CPU time is measured over an idle window (its polling loops alone), then over a
 * window of the same length while the partner creates orders (each a `sales_order_created` event
 * it receives and fans out to nobody). CPU per event = (loaded − idle) ÷ orders accepted.
 *
 *   node dist/bench/fanout-cost.bench.js [--seconds 20] [--connections 10] [--cpu-prof]
 *     [--postgres URL] [--nats URL]
 *
 * With --cpu-prof the webhooks process runs under V8's profiler and its profile is summarised
 * (which package the time went to: the NATS receive, Moleculer's channel, the database). Prints
 * its figures; bench/README.md records them by hand.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { CpuWindow } from "./cpu-time";
import { postOrders } from "./load";
import { LOOPBACK, positiveInteger, serverUrls, UsageError } from "./options";
import { stopAll } from "./processes";
import { profileReport, summarizeProfiles } from "./profile-summary";
import { deployDistributed, newRunId, type DistributedRun } from "./targets";

const log = (line: string) => console.log(`[bench:fanout-cost] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SETTLE_MS = 3_000;

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      seconds: { type: "string", default: "20" },
      connections: { type: "string", default: "10" },
      postgres: { type: "string", default: `postgres://postgres@${LOOPBACK}:5432/postgres` },
      nats: { type: "string", default: `nats://${LOOPBACK}:4222` },
      "cpu-prof": { type: "boolean", default: false },
    },
    strict: true,
  });
  const seconds = positiveInteger("seconds", values.seconds, 1);
  const connections = positiveInteger("connections", values.connections, 1);
  const profileDir = values["cpu-prof"] ? mkdtempSync(path.join(os.tmpdir(), "fanout-cost-profiles-")) : undefined;
  const startedAt = new Date().toISOString();
  const run: DistributedRun = {
    runId: newRunId(startedAt),
    nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
    options: serverUrls(values),
  };
  const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  log(`load average ${loadAverage()}; deploying the distributed mode, no subscription`);
  const deployment = await deployDistributed(run, { bench: "fanout" });
  const webhooks = deployment.processes.find((p) => p.name === "webhooks");
  if (!webhooks) throw new Error("no webhooks process in the deployment");
  const measured = [{ name: "webhooks", pids: () => [webhooks.pid] }];
  const cpuOf = async (window: CpuWindow) => (await window.finish()).find((s) => s.name === "webhooks")?.cpuMs ?? 0;
  try {
    log(`warm-up: ${seconds} s of orders`);
    await postOrders(deployment.baseUrl, deployment.partner, connections, seconds);
    await sleep(SETTLE_MS);
    log(`idle: ${seconds} s`);
    const idleWindow = CpuWindow.start(measured);
    await sleep(seconds * 1000);
    const idleMs = await cpuOf(idleWindow);
    log(`loaded: ${seconds} s of orders over ${connections} connections`);
    const loadedWindow = CpuWindow.start(measured);
    const started = Date.now();
    const load = await postOrders(deployment.baseUrl, deployment.partner, connections, seconds);
    // The last orders' events are received within the settling pause; it is idle time otherwise.
    await sleep(SETTLE_MS);
    const loadedMs = await cpuOf(loadedWindow);
    const idleShare = (idleMs / (seconds * 1000)) * (Date.now() - started);
    const events = load.requests - load.non2xx;
    const round = (n: number) => Math.round(n * 1000) / 1000;
    console.log(
      [
        "",
        `| load average | orders (events) | orders/s | webhooks CPU idle (ms per s) | webhooks CPU loaded (ms) | ms per event, all | ms per event, above idle |`,
        `|---|---:|---:|---:|---:|---:|---:|`,
        `| ${loadAverage()} | ${events} | ${load.requestsPerSecond.mean} | ${round(idleMs / seconds)} | ${loadedMs} | ${round(loadedMs / Math.max(1, events))} | ${round((loadedMs - idleShare) / Math.max(1, events))} |`,
        "",
      ].join("\n"),
    );
  } finally {
    await deployment.tearDown();
  }
  if (profileDir) {
    const profiles = summarizeProfiles(profileDir, new Map([[webhooks.pid, "webhooks"]]));
    console.log(`webhooks process, whole life (share of its busy samples):\n\n${profileReport(profiles)}\n`);
  }
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
