/**
 * Broker options only; everything comes from the typed config (shared/config.ts).
 */
import os from "node:os";
import type { BrokerOptions } from "moleculer";
import type { Config } from "./shared/config";
import { scopeGuard } from "./shared/auth";
import { LOG_REDACT_PATHS } from "./shared/logging";

export function brokerOptions(cfg: Config): BrokerOptions {
  return {
    namespace: "order-intake",
    nodeID: cfg.nodeId || `${os.hostname()}-${process.pid}`,
    transporter: (cfg.transporter ?? null) as BrokerOptions["transporter"],
    logger: {
      type: "Pino",
      options: {
        level: cfg.logLevel,
        pino: { options: { redact: { paths: LOG_REDACT_PATHS, censor: "[redacted]" } } },
      },
    },
    logLevel: cfg.logLevel,
    requestTimeout: cfg.requestTimeoutMs,
    // A remote call is never retried blindly: creating an order is not idempotent by itself.
    retryPolicy: { enabled: false },
    registry: { strategy: "RoundRobin", preferLocal: true },
    // Track in-flight calls so that stopping waits for them (graceful shutdown).
    tracking: { enabled: true, shutdownTimeout: cfg.shutdownTimeoutMs },
    validator: { type: "Fastest", options: { useNewCustomCheckerFunction: true } } as BrokerOptions["validator"],
    middlewares: [scopeGuard],
    metrics: { enabled: false },
    tracing: { enabled: false },
  };
}
