/**
 * `npm run bench:idle-cpu` (issue 23): what the distributed mode costs while nothing happens —
 * its polling loops alone. Deploys it (one process per service, a fresh database), places one
 * order so that every path has run once, lets it settle, then reads each process's CPU time, and
 * that of PostgreSQL's backends for its database, over an idle window, and the transactions its
 * database committed meanwhile (pg_stat_database: each polling statement is one; unlike CPU time,
 * a count the machine's load does not change). The figures are fixed costs: under load,
 * bench:orders and bench:webhooks divide them by the rate.
 *
 *   node dist/bench/idle-cpu.bench.js [--seconds 30] [--postgres URL] [--nats URL]
 *
 * Prints its table; bench/README.md records it by hand.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { CpuWindow, deploymentGroups, WHOLE_MACHINE } from "./cpu-time";
import { DatabaseWindow } from "./database-activity";
import { LOOPBACK, positiveInteger, serverUrls, UsageError } from "./options";
import { stopAll } from "./processes";
import { placeOneOrder } from "./seed";
import { deployDistributed, newRunId, type DistributedRun } from "./targets";

const log = (line: string) => console.log(`[bench:idle-cpu] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Long enough for the first order's event to be relayed and fanned out before the window opens. */
const SETTLE_MS = 5_000;
/** The load generator does nothing in the window; the shared NATS server carries others' traffic. */
const NOT_THE_DEPLOYMENT = new Set(["load generator", "nats-server"]);

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      seconds: { type: "string", default: "30" },
      postgres: { type: "string", default: `postgres://postgres@${LOOPBACK}:5432/postgres` },
      nats: { type: "string", default: `nats://${LOOPBACK}:4222` },
    },
    strict: true,
  });
  const seconds = positiveInteger("seconds", values.seconds, 1);
  const run: DistributedRun = {
    runId: newRunId(new Date().toISOString()),
    nodeArgs: [],
    options: serverUrls(values),
  };
  const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  log(`load average ${loadAverage()}; deploying the distributed mode`);
  const deployment = await deployDistributed(run, { bench: "idle" });
  try {
    await placeOneOrder(deployment.baseUrl, deployment.partner);
    await sleep(SETTLE_MS);
    log(`idle: ${seconds} s`);
    const database = await DatabaseWindow.start(run.options.postgresUrl, deployment.databaseName!);
    const window = CpuWindow.start(deploymentGroups(deployment, run.options.postgresUrl));
    await sleep(seconds * 1000);
    // Per "request", one a second: the database's counters per second.
    const perSecond = await database.perRequest(seconds);
    const shares = (await window.finish()).filter(
      (s) => !NOT_THE_DEPLOYMENT.has(s.name) && !s.name.startsWith("other: ") && s.name !== WHOLE_MACHINE,
    );
    const msPerSecond = (ms: number) => Math.round((ms / seconds) * 10) / 10;
    const total = shares.reduce((sum, s) => sum + s.cpuMs, 0);
    console.log(
      [
        "",
        `load average ${loadAverage()}, ${seconds} s idle`,
        "",
        "| process | CPU, ms per s |",
        "|---|---:|",
        ...shares.map((s) => `| ${s.name} | ${msPerSecond(s.cpuMs)} |`),
        `| **all** | **${msPerSecond(total)}** |`,
        "",
        `PostgreSQL, the deployment's database, per second: ${perSecond.commits} transactions, ${perSecond.rowsFetched} rows fetched, ${perSecond.rowsUpdated} updated`,
        "",
      ].join("\n"),
    );
  } finally {
    await deployment.tearDown();
  }
}

main().catch(async (err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  await stopAll();
  process.exit(err instanceof UsageError ? 2 : 1);
});
