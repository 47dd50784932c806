/**
 * The benchmark's webhook receiver, a process of its own:
 *
 *   node dist/bench/webhook-sink.js --port <port>
 *
 * A bare node:http server on 127.0.0.1 that answers every webhook 200 as soon as its body is in,
 * then records when the request arrived (its headers, on the machine's clock: Date.now(), which
 * the driver also uses), its path, X-WEBHOOK-EVENT, webhook-id and the order `code` of its body.
 * The driver reads the records (GET /_sink/records), empties them (DELETE /_sink/records) and
 * follows progress (GET /_sink/count) between and during phases.
 */
import http from "node:http";
import { parseArgs } from "node:util";
import { CONTROL_PREFIX, type SinkCount, type SinkRecords } from "./webhook-sink-client";

/** Longer than any pause between phases: a keep-alive connection closed by the receiver while a sender reuses it would count as a failed attempt that is not the service's doing. */
const KEEP_ALIVE_MS = 120_000;

const { values } = parseArgs({ options: { port: { type: "string" } }, strict: true });
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0) {
  console.error("usage: webhook-sink.js --port <port>");
  process.exit(2);
}

let records: SinkRecords = emptyRecords();
let distinct = new Set<string>();

function emptyRecords(): SinkRecords {
  return { at: [], path: [], event: [], webhookId: [], code: [] };
}

function header(req: http.IncomingMessage, name: string): string {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : (value ?? "");
}

function codeOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { code?: unknown };
    return typeof parsed.code === "string" ? parsed.code : "";
  } catch {
    return "";
  }
}

function control(req: http.IncomingMessage, res: http.ServerResponse): void {
  const json = (value: unknown) => {
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(value));
  };
  const route = `${req.method} ${req.url}`;
  if (route === `GET ${CONTROL_PREFIX}count`) {
    json({ requests: records.at.length, distinctIds: distinct.size } satisfies SinkCount);
  } else if (route === `GET ${CONTROL_PREFIX}records`) {
    json(records);
  } else if (route === `DELETE ${CONTROL_PREFIX}records`) {
    records = emptyRecords();
    distinct = new Set();
    json({ cleared: true });
  } else {
    res.writeHead(404).end();
  }
}

const server = http.createServer((req, res) => {
  if (req.url?.startsWith(CONTROL_PREFIX)) {
    req.resume();
    return control(req, res);
  }
  const at = Date.now();
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    // Answer first, record afterwards: the sender waits for nothing but the status.
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": "2" }).end("ok");
    const webhookId = header(req, "webhook-id");
    records.at.push(at);
    records.path.push(req.url ?? "/");
    records.event.push(header(req, "x-webhook-event"));
    records.webhookId.push(webhookId);
    records.code.push(codeOf(Buffer.concat(chunks).toString("utf8")));
    if (webhookId) distinct.add(webhookId);
  });
});
server.keepAliveTimeout = KEEP_ALIVE_MS;
server.headersTimeout = KEEP_ALIVE_MS + 1_000;
server.listen(port, "127.0.0.1");

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
