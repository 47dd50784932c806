/**
 * The answers of /healthz, /readyz and /metrics, the same wherever they are served: on
 * HEALTH_PORT (shared/observability/probe-server.ts) and on the gateway's PORT (gateway/probe-route.ts; there
 * /metrics only with METRICS_ON_PUBLIC_PORT).
 */
import type { ServiceBroker } from "moleculer";
import { checkReadiness, type ReadinessOptions } from "./readiness";
import { renderMetrics } from "./metrics";

export const PROBE_PATHS = ["/healthz", "/readyz", "/metrics"] as const;
export type ProbePath = (typeof PROBE_PATHS)[number];

export interface ProbeAnswer {
  status: number;
  contentType: string;
  body: string;
}

const JSON_TYPE = "application/json; charset=utf-8";

export function isProbePath(path: string): path is ProbePath {
  return (PROBE_PATHS as readonly string[]).includes(path);
}

export async function answerProbe(
  broker: ServiceBroker,
  path: ProbePath,
  readiness: ReadinessOptions,
): Promise<ProbeAnswer> {
  switch (path) {
    case "/healthz":
      // Liveness: the process answers. It stays 200 while shutting down, so nothing restarts a draining process.
      return { status: 200, contentType: JSON_TYPE, body: JSON.stringify({ status: "ok" }) };
    case "/readyz": {
      const report = await checkReadiness(broker, readiness);
      return { status: report.status === "ok" ? 200 : 503, contentType: JSON_TYPE, body: JSON.stringify(report) };
    }
    case "/metrics": {
      const { contentType, body } = await renderMetrics(broker);
      return { status: 200, contentType, body };
    }
  }
}
