/**
 * The baseline's sender, one process standing for one webhooks process's dispatcher:
 *
 *   node dist/bench/webhook-baseline-client.js --urls <origin>,<origin>,... --bodies <file.json>
 *     --paths 10 --in-flight 50 --share 0/2 --warmup 500
 *
 * A bare loop: POSTs the same order bodies the service delivered to the same receiver origins
 * and paths (/hook/n on the n-th origin), `--in-flight` at a time over keep-alive node:http
 * connections (one pool per origin, as the dispatcher has); no database,
 * no claim, no signing, no attempt recorded. Of every (body, path) pair it takes its share
 * (`--share k/n`: the pairs whose index is k modulo n), so n processes send each pair once.
 *
 * It first sends `--warmup` requests to /warmup/... (JIT, connections), writes `{"ready":true}`,
 * and waits for SIGUSR2 so that the driver starts every sender together inside its measured
 * window. It then writes one JSON line of figures and stays until SIGTERM, so that the driver can
 * still read its CPU time.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { parseArgs } from "node:util";
import { SUBSCRIBED_EVENT, targetOrigin, targetPath } from "./webhooks-load";

export interface BaselineSenderReport {
  done: true;
  sent: number;
  succeeded: number;
  failed: number;
  statusCodes: Record<string, number>;
  startedAt: number;
  finishedAt: number;
  /** The process's peak RSS (getrusage), in KiB. */
  maxRssKiB: number;
}

interface Job {
  origin: URL;
  path: string;
  body: Buffer;
  webhookId: string;
}

const { values } = parseArgs({
  options: {
    urls: { type: "string" },
    bodies: { type: "string" },
    paths: { type: "string", default: "10" },
    "in-flight": { type: "string", default: "50" },
    share: { type: "string", default: "0/1" },
    warmup: { type: "string", default: "0" },
  },
  strict: true,
});

const [shareIndex, shareCount] = values.share.split("/").map(Number);
const paths = Number(values.paths);
const inFlight = Number(values["in-flight"]);
const warmup = Number(values.warmup);
if (
  !values.urls ||
  !values.bodies ||
  ![shareIndex, shareCount, paths, inFlight, warmup].every(Number.isInteger) ||
  shareIndex >= shareCount
) {
  console.error(
    "usage: webhook-baseline-client.js --urls URL,URL,... --bodies FILE [--paths 10] [--in-flight 50] [--share k/n] [--warmup 0]",
  );
  process.exit(2);
}
const origins = values.urls.split(",");
const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });

function jobs(): Job[] {
  const bodies = (JSON.parse(readFileSync(values.bodies as string, "utf8")) as string[]).map((b) => Buffer.from(b));
  const all: Job[] = [];
  let index = 0;
  for (const body of bodies) {
    for (let p = 1; p <= paths; p++, index++) {
      if (index % shareCount === shareIndex)
        all.push({
          origin: new URL(targetOrigin(origins, p)),
          path: targetPath(p),
          body,
          webhookId: `baseline_${index}`,
        });
    }
  }
  return all;
}

function post(job: Job): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: job.origin.hostname,
        port: job.origin.port,
        path: job.path,
        method: "POST",
        agent,
        headers: {
          "Content-Type": "application/json",
          "Content-Length": job.body.length,
          "X-WEBHOOK-EVENT": SUBSCRIBED_EVENT,
          "webhook-id": job.webhookId,
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", () => resolve(0));
    req.end(job.body);
  });
}

/** Sends every job, `inFlight` at a time; counts the answers by status (0: no answer). */
async function sendAll(list: Job[], statusCodes: Record<string, number>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < list.length) {
      const status = await post(list[next++]);
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

async function main(): Promise<void> {
  const measured = jobs();
  const warmupJobs = measured
    .slice(0, warmup)
    .map((j, i) => ({ ...j, path: `/warmup${j.path}`, webhookId: `warmup_${shareIndex}_${i}` }));
  await sendAll(warmupJobs, {});
  const go = new Promise<void>((resolve) => process.once("SIGUSR2", () => resolve()));
  console.log(JSON.stringify({ ready: true }));
  await go;

  const statusCodes: Record<string, number> = {};
  const startedAt = Date.now();
  await sendAll(measured, statusCodes);
  const finishedAt = Date.now();
  const succeeded = Object.entries(statusCodes)
    .filter(([s]) => Number(s) >= 200 && Number(s) < 300)
    .reduce((sum, [, n]) => sum + n, 0);
  const report: BaselineSenderReport = {
    done: true,
    sent: measured.length,
    succeeded,
    failed: measured.length - succeeded,
    statusCodes,
    startedAt,
    finishedAt,
    maxRssKiB: process.resourceUsage().maxRSS,
  };
  console.log(JSON.stringify(report));
}

// Stays until stopped: its CPU time is read after it is done.
const keepAlive = setInterval(() => undefined, 60_000);
process.once("SIGTERM", () => {
  clearInterval(keepAlive);
  agent.destroy();
  process.exit(0);
});
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
