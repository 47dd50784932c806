/**
 * A small node:http server for /healthz, /readyz and /metrics on HEALTH_PORT, in every process
 * (the gateway's too): where Prometheus scrapes, a port only the cluster reaches, since the
 * gateway's public port has no /metrics unless METRICS_ON_PUBLIC_PORT says so. It answers until
 * the process exits; while shutting down, /readyz answers 503.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ServiceBroker } from "moleculer";
import { answerProbe, isProbePath } from "./probes";
import type { ReadinessOptions } from "./readiness";

export interface ProbeServer {
  port: number;
  close(): Promise<void>;
}

function handler(broker: ServiceBroker, readiness: ReadinessOptions): http.RequestListener {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" || !isProbePath(path)) {
      res
        .writeHead(404, { "Content-Type": "application/json; charset=utf-8" })
        .end(JSON.stringify({ status: 404, title: "Not found" }));
      return;
    }
    answerProbe(broker, path, readiness).then(
      (answer) => res.writeHead(answer.status, { "Content-Type": answer.contentType }).end(answer.body),
      (err: unknown) => {
        broker.logger.error({ err, path }, "probe failed");
        res
          .writeHead(500, { "Content-Type": "application/json; charset=utf-8" })
          .end(JSON.stringify({ status: "error" }));
      },
    );
  };
}

export function startProbeServer(
  broker: ServiceBroker,
  port: number,
  host: string,
  readiness: ReadinessOptions,
): Promise<ProbeServer> {
  const server = http.createServer(handler(broker, readiness));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
