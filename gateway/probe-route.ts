/**
 * The moleculer-web routes of the probes on the gateway's PORT: outside /api/v1, without
 * authentication or rate limiting, answered by shared/observability/probes.ts. /healthz and /readyz always;
 * /metrics only with METRICS_ON_PUBLIC_PORT, since the public port should not show the
 * process's internals to anyone who can reach the API (it is on HEALTH_PORT, shared/observability/probe-server.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Service } from "moleculer";
import { answerProbe, PROBE_PATHS, type ProbePath } from "../shared/observability/probes";
import type { ReadinessOptions } from "../shared/observability/readiness";

type AliasHandler = (this: Service, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** The probe paths the gateway answers on its public port (and so documents in its OpenAPI document). */
export function publicProbePaths(metricsOnPublicPort: boolean): ProbePath[] {
  return PROBE_PATHS.filter((path) => path !== "/metrics" || metricsOnPublicPort);
}

function probeHandler(path: ProbePath, readiness: ReadinessOptions): AliasHandler {
  return function answer(_req, res, next) {
    answerProbe(this.broker, path, readiness).then((a) => {
      res.writeHead(a.status, { "Content-Type": a.contentType });
      res.end(a.body);
    }, next);
  };
}

/**
 * One route per probe path, each with a single alias: no route catches other paths by prefix,
 * so the order of the gateway's routes does not matter.
 */
export function probeRoutes(metricsOnPublicPort: boolean, readiness: ReadinessOptions) {
  return publicProbePaths(metricsOnPublicPort).map((path) => ({
    name: `probe:${path}`,
    path,
    aliases: { "GET /": probeHandler(path, readiness) },
    mappingPolicy: "restrict" as const,
    autoAliases: false,
    authentication: false,
    authorization: false,
    // Probes every few seconds would drown the debug log; the access log still records them.
    logging: false,
  }));
}
