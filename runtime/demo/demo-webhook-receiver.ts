/**
 * The subscriber's side of `npm run demo:webhooks`: a plain HTTP server on 127.0.0.1 that
 * keeps what it receives (headers and the exact body bytes a signature covers) and answers 204.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface DemoReceiver {
  url: string;
  /** The first request received, or a rejection after `timeoutMs`. */
  firstRequest(timeoutMs: number): Promise<ReceivedRequest>;
  close(): Promise<void>;
}

export async function startDemoReceiver(): Promise<DemoReceiver> {
  const received: ReceivedRequest[] = [];
  const waiting: ((request: ReceivedRequest) => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      received.push(request);
      for (const resolve of waiting.splice(0)) resolve(request);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks/orders`,
    firstRequest(timeoutMs) {
      if (received.length > 0) return Promise.resolve(received[0]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no delivery reached the receiver within ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
        waiting.push((request) => {
          clearTimeout(timer);
          resolve(request);
        });
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
