/**
 * `npm run bench:nats-cluster`: how long webhook deliveries pause when the NATS node that leads
 * the streams dies (issue 26). Three nats-server processes with JetStream clustering on
 * loopback, the distributed mode on them (one process per service) and PostgreSQL
 * (TEST_DATABASE_URL, default the local server), a partner's orders created and validated at a
 * steady rate, a local receiver of both events; each run kills the node leading the streams
 * (SIGKILL) and starts it again (test/helpers/nats-cluster-drill.ts). Prints one line per run
 * and the summary: the longest pause between deliveries against the streams' leader election.
 *
 *   NATS_DRILL_RATE=20 NATS_DRILL_DOWN_MS=20000 NATS_DRILL_RUNS=3 npm run bench:nats-cluster
 *   JETSTREAM_REPLICAS=1 NATS_DRILL_RUNS=1 npm run bench:nats-cluster    # as before issue 26
 */
import os from "node:os";
import { leaderKillDrill, startClusterDrill, type LeaderKillResult } from "../test/helpers/nats-cluster-drill";

process.env.TEST_DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";
const RATE = Number(process.env.NATS_DRILL_RATE ?? 20);
const DOWN_MS = Number(process.env.NATS_DRILL_DOWN_MS ?? 20_000);
const RUNS = Number(process.env.NATS_DRILL_RUNS ?? 3);
/** Handed to the processes when set: 1 shows the pause with one replica per stream. */
const REPLICAS = process.env.JETSTREAM_REPLICAS;

const machineLoad = () =>
  `${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" / ")} (1 / 5 / 15 min)`;

const range = (values: number[]) => (values.length === 0 ? "–" : `${Math.min(...values)}–${Math.max(...values)} ms`);

async function main(): Promise<void> {
  console.log(`[nats-cluster] machine at start: ${machineLoad()}`);
  const drill = await startClusterDrill(REPLICAS ? { JETSTREAM_REPLICAS: REPLICAS } : {});
  const results: LeaderKillResult[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const result = await leaderKillDrill(drill, `ncb-${Date.now().toString(36)}-${run}`, {
        perSecond: RATE,
        beforeMs: 10_000,
        downMs: DOWN_MS,
        afterMs: 15_000,
        deliveryTimeoutMs: 60_000,
      });
      results.push(result);
      console.log(result.line);
    }
    const elections = results.flatMap((r) => (r.electionMs === null ? [] : [r.electionMs]));
    console.log(`[nats-cluster] machine at end: ${machineLoad()}`);
    console.log(
      `[nats-cluster] summary of ${results.length} run(s) at ${RATE} orders/s, JETSTREAM_REPLICAS=${REPLICAS ?? "auto"}: ` +
        `longest pause between deliveries of one event ${range(results.map((r) => r.gapMs))}, ` +
        `leader elections done after ${range(elections)}, pause beyond the election ${range(
          results.flatMap((r) => (r.electionMs === null ? [] : [r.gapMs - r.electionMs])),
        )}, webhooks missing ${results.reduce((n, r) => n + r.missing.length, 0)}, twice ${results.reduce((n, r) => n + r.duplicates.length, 0)}`,
    );
  } finally {
    await drill.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
