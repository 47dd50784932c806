/**
 * `npm start`: runs the services named in SERVICES (all of them by default) in this process.
 * Embedded by default (no transporter, PGlite in ./.data); distributed with TRANSPORTER and
 * DATABASE_URL. SIGTERM/SIGINT stop taking requests, finish in-flight work, then exit 0.
 */
import { config } from "../shared/config/config";
import { startProbeServer, type ProbeServer } from "../shared/observability/probe-server";
import { createBroker, stopBroker } from "./broker";
import { seedDemoDataIfWanted } from "./demo/demo";
import { startFailureText } from "./start-failure";

/** Named in the one-line reason when the database does not answer. */
let databaseUrl: string | null = null;

/**
 * Set by SIGTERM/SIGINT. A stop can come while the services are still starting (an orchestrator
 * replacing a pod that has just become ready: the channels may still be subscribing); the start
 * then fails because the stop closes its connections, and that is the stop's doing, not a failed
 * start: the shutdown under way decides the exit code.
 */
let stopRequested = false;

async function main(): Promise<void> {
  const cfg = config();
  databaseUrl = cfg.databaseUrl;
  const broker = createBroker(cfg);
  let probes: ProbeServer | null = null;

  const shutdown = async (signal: string) => {
    if (stopRequested) return;
    stopRequested = true;
    broker.logger.info(`${signal} received: draining in-flight work, then stopping`);
    const timer = setTimeout(() => process.exit(1), cfg.shutdownTimeoutMs + 5_000);
    timer.unref();
    try {
      await stopBroker(broker);
      await probes?.close();
      // The last line a clean stop writes: a supervisor's own record of the exit can be wrong
      // (podman 4.3 has recorded 137 for a process that exited 0 during its stop).
      broker.logger.info(`Stopped after ${signal}: every service drained; exiting with code 0.`);
      process.exit(0);
    } catch (err) {
      broker.logger.error(err);
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  // Probes answer from the start: /healthz at once, /readyz 503 until the services have started.
  if (cfg.healthPort > 0)
    probes = await startProbeServer(broker, cfg.healthPort, cfg.host, { checkTimeoutMs: cfg.readinessCheckTimeoutMs });
  await broker.start();
  await seedDemoDataIfWanted(broker, cfg);
}

main().catch((err: unknown) => {
  if (stopRequested) return;
  const oneLine = startFailureText(err, databaseUrl);
  if (oneLine) console.error(oneLine);
  else console.error("Failed to start:", err);
  process.exit(1);
});
