/**
 * Builds the broker of one process from the typed config: the services named in SERVICES,
 * the transporter (none when embedded), and a stop that also closes the shared database.
 */
import { ServiceBroker, type BrokerOptions } from "moleculer";
import { brokerOptions } from "../moleculer.config";
import { config, setConfig, type Config } from "../shared/config/config";
import { closeDatabase } from "../shared/database/db";
import { useProcessKeys } from "../shared/security/secrets-keyring";
import { schemaOf } from "./services";
import { drainForShutdown } from "../shared/shutdown";
import { startTracing, stopTracing } from "../shared/observability/tracing";

export function createBroker(cfg: Config, overrides: Partial<BrokerOptions> = {}): ServiceBroker {
  setConfig(cfg);
  useProcessKeys(cfg);
  const broker = new ServiceBroker({ ...brokerOptions(cfg), ...overrides });
  startTracing({ ...cfg.tracing, serviceName: traceServiceName(cfg), namespace: cfg.namespace, nodeId: broker.nodeID });
  for (const name of cfg.services) broker.createService(schemaOf(name, cfg));
  return broker;
}

/** service.name of the spans: OTEL_SERVICE_NAME, else the one service this process runs, else the product. */
function traceServiceName(cfg: Config): string {
  return cfg.tracing.serviceName ?? (cfg.services.length === 1 ? cfg.services[0] : "order-intake");
}

/**
 * Stops within SHUTDOWN_TIMEOUT_MS: readiness turns 503 and the gateway stops taking requests
 * and finishes its in-flight ones (shared/shutdown.ts), then the broker waits for the
 * action calls and event handlers still running with what is left of the same budget.
 */
export async function stopBroker(broker: ServiceBroker): Promise<void> {
  const deadline = Date.now() + config().shutdownTimeoutMs;
  await drainForShutdown(broker, deadline);
  // Read by moleculer's context tracker when the services stop; at least 1 s for background work.
  if (broker.options.tracking) broker.options.tracking.shutdownTimeout = Math.max(1_000, deadline - Date.now());
  await broker.stop();
  await closeDatabase();
  // The spans still batched are sent before the process exits.
  await stopTracing();
}
