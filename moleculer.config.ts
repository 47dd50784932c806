/**
 * Broker options only; everything comes from the typed config (shared/config.ts).
 */
import os from "node:os";
import type { BrokerOptions } from "moleculer";
import type { Config } from "./shared/config";
import { scopeGuard } from "./shared/auth";
import { channelsMiddleware } from "./shared/channels";
import { LOG_REDACT_PATHS } from "./shared/logging";
import { actionMetricsMiddleware } from "./shared/metrics";
import { requestContextMiddleware, requestLogFields } from "./shared/request-context";

export function brokerOptions(cfg: Config): BrokerOptions {
  return {
    namespace: cfg.namespace,
    nodeID: cfg.nodeId || `${os.hostname()}-${process.pid}`,
    transporter: (cfg.transporter ?? null) as BrokerOptions["transporter"],
    logger: {
      type: "Pino",
      options: {
        level: cfg.logLevel,
        // `mixin` adds the request id to every line written while handling a request.
        pino: { options: { redact: { paths: LOG_REDACT_PATHS, censor: "[redacted]" }, mixin: requestLogFields } },
      },
    },
    logLevel: cfg.logLevel,
    requestTimeout: cfg.requestTimeoutMs,
    // A node announces its services (and the events it listens to) this long after they change;
    // moleculer's 1 s default leaves a freshly started gateway deaf to broadcasts for that long.
    transit: { serviceChangedDebounceTime: 200 } as BrokerOptions["transit"],
    // A remote call is never retried blindly: creating an order is not idempotent by itself.
    retryPolicy: { enabled: false },
    registry: { strategy: "RoundRobin", preferLocal: true },
    // Track in-flight calls so that stopping waits for them (graceful shutdown).
    tracking: { enabled: true, shutdownTimeout: cfg.shutdownTimeoutMs },
    validator: { type: "Fastest", options: { useNewCustomCheckerFunction: true } } as BrokerOptions["validator"],
    // Channels: durable broadcast of domain events (JetStream when distributed, in-process when embedded).
    middlewares: [requestContextMiddleware, actionMetricsMiddleware, scopeGuard, channelsMiddleware(cfg)],
    // Metrics are prom-client's (shared/metrics.ts), one registry per process: moleculer's own stay off.
    metrics: { enabled: false },
    tracing: { enabled: false },
  };
}
