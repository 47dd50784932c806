/**
 * `npm run bench:failover`: the error window and the losses of each fault of issue 10, under a
 * steady load, on real processes (two of every service), a private nats-server and PostgreSQL
 * (TEST_DATABASE_URL, default the local server). The outages last 30 s here (10 s in the e2e
 * suite, to keep CI short). Prints one line per fault: the figure to watch over time.
 *
 *   FAILOVER_RATE=100 FAILOVER_OUTAGE_MS=30000 npm run bench:failover
 */
import os from "node:os";
import {
  REPLICATED_SERVICES,
  databaseDrill,
  natsDrill,
  replicaDrill,
  startFaultCluster,
  undeliveredEvents,
  type DrillResult,
} from "../test/helpers/fault-drills";

process.env.TEST_DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";
const RATE = Number(process.env.FAILOVER_RATE ?? 100);
const OUTAGE_MS = Number(process.env.FAILOVER_OUTAGE_MS ?? 30_000);
/** Comma-separated: kill,term,nats,postgres (all by default). */
const PHASES = new Set((process.env.FAILOVER_PHASES ?? "kill,term,nats,postgres").split(","));
const SERVICES = process.env.FAILOVER_SERVICES ? process.env.FAILOVER_SERVICES.split(",") : REPLICATED_SERVICES;

/** The machine is shared: its load says how much the figures can be trusted. */
const machineLoad = () =>
  `${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" / ")} (1 / 5 / 15 min)`;

async function main(): Promise<void> {
  console.log(`[failover] machine at start: ${machineLoad()}`);
  const fc = await startFaultCluster();
  const results: DrillResult[] = [];
  const report = (r: DrillResult) => {
    results.push(r);
    console.log(r.line);
  };
  try {
    for (const signal of ["SIGKILL", "SIGTERM"] as const) {
      if (!PHASES.has(signal === "SIGKILL" ? "kill" : "term")) continue;
      for (const service of SERVICES)
        report(
          await replicaDrill(fc, service as (typeof REPLICATED_SERVICES)[number], signal, RATE, {
            beforeMs: 3_000,
            afterMs: 12_000,
          }),
        );
    }
    if (PHASES.has("nats")) report(await natsDrill(fc, OUTAGE_MS, RATE, 15_000));
    if (PHASES.has("postgres")) report(await databaseDrill(fc, OUTAGE_MS, RATE, 15_000));
    let undelivered = 0;
    for (const r of results) undelivered += (await undeliveredEvents(fc, r, 60_000)).length;
    console.log(`[failover] events of accepted partner orders not delivered within 60 s: ${undelivered}`);
    const worst = Math.max(
      ...results.filter((r) => r.name.startsWith("SIG")).map((r) => r.run.summary.errorWindowMs),
      0,
    );
    console.log(`[failover] machine at end: ${machineLoad()}`);
    console.log(
      `[failover] summary: worst replica error window ${worst} ms, orders lost ${results.reduce((n, r) => n + r.losses.lost.length, 0)}, duplicated ${results.reduce((n, r) => n + r.losses.duplicated.length, 0)}`,
    );
  } finally {
    await fc.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
