/**
 * Broker options only; everything comes from the typed config (shared/config/config.ts).
 */
import os from "node:os";
import type { BrokerOptions } from "moleculer";
import type { Config } from "./shared/config/config";
import { scopeGuard } from "./shared/security/auth";
import { channelsMiddleware } from "./shared/messaging/channels";
import { brokerLogger } from "./shared/observability/logging";
import { actionMetricsMiddleware } from "./shared/observability/metrics";
import { remoteCallsMiddleware, mayRetry } from "./shared/messaging/remote-calls";
import { requestContextMiddleware, requestLogFields } from "./shared/observability/request-context";
import { tracingMiddleware } from "./shared/observability/tracing";
import { startProgressMiddleware } from "./shared/observability/start-progress";
import { NATS_RECONNECT_WAIT_MS, transporterConnectionMiddleware } from "./shared/messaging/transporter-connection";

/**
 * How fast a node that vanished leaves the registry (seconds; moleculer's defaults are 10 and
 * 30, and it checks every `timeout` seconds, so a dead node was noticed 30–60 s late). It matters
 * once every replica of a service is gone: until then the queue group already routes around a
 * dead one. 2 and 6: noticed within 6–12 s, for one small message a node sends every 2 s.
 */
const HEARTBEAT_INTERVAL_S = 2;
const HEARTBEAT_TIMEOUT_S = 6;

export function brokerOptions(cfg: Config): BrokerOptions {
  return {
    namespace: cfg.namespace,
    nodeID: cfg.nodeId || `${os.hostname()}-${process.pid}`,
    transporter: cfg.transporter
      ? { type: "NATS", options: { url: cfg.transporter, reconnectTimeWait: NATS_RECONNECT_WAIT_MS } }
      : null,
    // `requestLogFields` adds the request id (and trace_id, span_id) to every line written while handling a request.
    logger: brokerLogger(cfg.logLevel, requestLogFields),
    logLevel: cfg.logLevel,
    requestTimeout: cfg.requestTimeoutMs,
    // NATS queue groups balance the requests instead of the broker: a request goes to a live
    // subscriber of the action, and a process killed with SIGKILL leaves its queue group the
    // moment NATS sees its socket close — no heartbeat to wait for (docs/operations.md, "What
    // happens when…"). Without a transporter there is nothing to balance.
    disableBalancer: Boolean(cfg.transporter),
    heartbeatInterval: HEARTBEAT_INTERVAL_S,
    heartbeatTimeout: HEARTBEAT_TIMEOUT_S,
    // A node announces its services (and the events it listens to) this long after they change;
    // moleculer's 1 s default leaves a freshly started gateway deaf to broadcasts for that long.
    transit: { serviceChangedDebounceTime: 200 } as BrokerOptions["transit"],
    // A call that timed out or whose node left is sent again, to another replica, only when a
    // repeat is harmless: reads, and orders with an Idempotency-Key or an externalId
    // (shared/messaging/repeatable-calls.ts). Short delays: the first answer was already late.
    retryPolicy: {
      enabled: true,
      retries: 2,
      delay: 100,
      maxDelay: 500,
      factor: 2,
      check: mayRetry,
    },
    // Off: with NATS balancing, the broker does not pick the node, so a breaker per endpoint would
    // blame whichever replica it listed first; outages already fail fast (transporter status,
    // database 503s).
    circuitBreaker: { enabled: false },
    registry: { strategy: "RoundRobin", preferLocal: true },
    // Track in-flight calls so that stopping waits for them (graceful shutdown).
    tracking: { enabled: true, shutdownTimeout: cfg.shutdownTimeoutMs },
    // Signals belong to whoever runs the broker (runtime/start.ts drains, then stops it; the
    // cluster runner stops its children first). moleculer's own SIGTERM/SIGINT handler stops the
    // broker and calls process.exit(0) at once, racing them: the spans still batched were lost,
    // and a cluster runner seeding its demo exited before its children, leaving them orphaned.
    skipProcessEventRegistration: true,
    validator: { type: "Fastest", options: { useNewCustomCheckerFunction: true } } as BrokerOptions["validator"],
    // Channels: durable broadcast of domain events (JetStream when distributed, in-process when embedded).
    // remoteCallsMiddleware first: the innermost wrapper of a remote call (it settles time-outs).
    // tracingMiddleware: a span per handler, the trace carried to other nodes (shared/observability/tracing.ts).
    middlewares: [
      remoteCallsMiddleware(),
      transporterConnectionMiddleware,
      requestContextMiddleware,
      tracingMiddleware,
      actionMetricsMiddleware,
      scopeGuard,
      channelsMiddleware(cfg),
      // Last: /readyz says "starting" until every other middleware's `started` hook has run.
      startProgressMiddleware(),
    ],
    // Metrics are prom-client's (shared/observability/metrics.ts), one registry per process: moleculer's own stay off.
    metrics: { enabled: false },
    tracing: { enabled: false },
  };
}
