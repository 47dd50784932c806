/**
 * The benchmark's webhook receiver, a process of its own:
 *
 *   node dist/bench/webhook-sink.js --ports <port>,<port>,...
 *
 * Bare node:http servers on 127.0.0.1, one per port — each port an origin of its own, as
 * separate subscribers are — that answer every webhook 200 as soon as its body is in, then
 * record when the request arrived (its headers, on the machine's clock: Date.now(), which the
 * driver also uses), its path, X-WEBHOOK-EVENT, webhook-id and the order `code` of its body.
 * The driver reads the records (GET /_sink/records), empties them (DELETE /_sink/records) and
 * follows progress (GET /_sink/count) between and during phases, on any port.
 *
 * `PUT /_sink/hang/<port>` makes that port accept requests and never answer them (nor record
 * them): a subscriber that hangs. `DELETE /_sink/hang` answers normally again on every port and
 * drops the connections left hanging.
 *
 * `PUT /_sink/fail/<port>/<percent>` makes that port answer 500 to that share of the requests,
 * at random (not recorded: a failed attempt is not a receipt), as a flaky subscriber does.
 * `POST /_sink/take` answers the records and empties them in one step, for a driver that reads
 * them as it goes (the soak) without losing what arrives between a read and a clear.
 */
import http from "node:http";
import { parseArgs } from "node:util";
import { CONTROL_PREFIX, deliveryKey, type SinkCount, type SinkRecords } from "./webhook-sink-client";

/** Longer than any pause between phases: a keep-alive connection closed by the receiver while a sender reuses it would count as a failed attempt that is not the service's doing. */
const KEEP_ALIVE_MS = 120_000;

const { values } = parseArgs({ options: { ports: { type: "string" } }, strict: true });
const ports = (values.ports ?? "").split(",").map(Number);
if (ports.length === 0 || !ports.every((port) => Number.isInteger(port) && port > 0)) {
  console.error("usage: webhook-sink.js --ports <port>,<port>,...");
  process.exit(2);
}

/** The ports that hang, and the requests they hold unanswered. */
const hangingPorts = new Set<number>();
const hanging = new Set<http.ServerResponse>();
/** The ports that fail a share of the requests: port → probability of a 500. */
const failingPorts = new Map<number, number>();

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
  } else if (req.method === "PUT" && req.url?.startsWith(`${CONTROL_PREFIX}hang/`)) {
    hangingPorts.add(Number(req.url.slice(`${CONTROL_PREFIX}hang/`.length)));
    json({ hanging: [...hangingPorts] });
  } else if (req.method === "PUT" && req.url?.startsWith(`${CONTROL_PREFIX}fail/`)) {
    const [port, percent] = req.url.slice(`${CONTROL_PREFIX}fail/`.length).split("/").map(Number);
    failingPorts.set(port, percent / 100);
    json({ failing: Object.fromEntries(failingPorts) });
  } else if (route === `POST ${CONTROL_PREFIX}take`) {
    json(records);
    records = emptyRecords();
  } else if (route === `DELETE ${CONTROL_PREFIX}hang`) {
    hangingPorts.clear();
    for (const res of hanging) res.destroy();
    hanging.clear();
    json({ hanging: [] });
  } else {
    res.writeHead(404).end();
  }
}

function receive(port: number, req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.url?.startsWith(CONTROL_PREFIX)) {
    req.resume();
    return control(req, res);
  }
  if (hangingPorts.has(port)) {
    req.resume();
    hanging.add(res);
    res.once("close", () => hanging.delete(res));
    return;
  }
  const at = Date.now();
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    if (Math.random() < (failingPorts.get(port) ?? 0)) {
      res.writeHead(500, { "Content-Type": "text/plain", "Content-Length": "4" }).end("flap");
      return;
    }
    // Answer first, record afterwards: the sender waits for nothing but the status.
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": "2" }).end("ok");
    const webhookId = header(req, "webhook-id");
    records.at.push(at);
    records.path.push(req.url ?? "/");
    records.event.push(header(req, "x-webhook-event"));
    records.webhookId.push(webhookId);
    records.code.push(codeOf(Buffer.concat(chunks).toString("utf8")));
    if (webhookId) distinct.add(deliveryKey(req.url ?? "/", webhookId));
  });
}

const servers = ports.map((port) => {
  const server = http.createServer((req, res) => receive(port, req, res));
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  server.listen(port, "127.0.0.1");
  return server;
});

const stop = () => {
  let open = servers.length;
  for (const server of servers) {
    server.close(() => {
      if (--open === 0) process.exit(0);
    });
    server.closeAllConnections();
  }
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
