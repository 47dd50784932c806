/**
 * The moleculer-web routes of /healthz, /readyz and /metrics on the gateway's PORT: outside
 * /api/v1, without authentication or rate limiting, answered by shared/probes.ts.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Service } from "moleculer";
import { answerProbe, PROBE_PATHS, type ProbePath } from "../shared/probes";

type AliasHandler = (this: Service, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

function probeHandler(path: ProbePath): AliasHandler {
  return function answer(_req, res, next) {
    answerProbe(this.broker, path).then((a) => {
      res.writeHead(a.status, { "Content-Type": a.contentType });
      res.end(a.body);
    }, next);
  };
}

/**
 * One route per probe path, each with a single alias: no route catches other paths by prefix,
 * so the order of the gateway's routes does not matter.
 */
export function probeRoutes() {
  return PROBE_PATHS.map((path) => ({
    name: `probe:${path}`,
    path,
    aliases: { "GET /": probeHandler(path) },
    mappingPolicy: "restrict" as const,
    autoAliases: false,
    authentication: false,
    authorization: false,
    // Probes every few seconds would drown the debug log; the access log still records them.
    logging: false,
  }));
}
