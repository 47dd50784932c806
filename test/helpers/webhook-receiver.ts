/**
 * A webhook receiver for tests: a node:http server on 127.0.0.1 and a random port that records
 * every request and answers as the test decides (200, an error status, or never).
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface ReceivedWebhook {
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

/** How to answer: a status code (at once or after a delay, with headers and a body of its own), or "hang" to never answer. */
export type Answer =
  number | { status: number; afterMs: number; headers?: Record<string, string>; body?: string } | "hang";

/** Decides the answer from the request and how many times this webhook-id was received before at this path (this delivery's earlier attempts). */
export type Behaviour = (request: ReceivedWebhook, previousDeliveries: number) => Answer;

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** `<path> <webhook-id>` of the requests that arrived while an earlier one of the same delivery was still unanswered. */
  overlapping: string[];
  /** Replaces how the receiver answers from now on. */
  answerWith(behaviour: Behaviour): void;
  /** Waits until `done(received)` holds, failing after `timeoutMs` with `describe()` in the message. */
  waitFor(done: (received: ReceivedWebhook[]) => boolean, timeoutMs: number, describe?: () => string): Promise<void>;
  close(): Promise<void>;
}

export const alwaysOk: Behaviour = () => 200;

/** `host`: the address to listen on and to name in `url` (a container network's gateway, for containers to reach). */
export async function startReceiver(behaviour: Behaviour = alwaysOk, host = "127.0.0.1"): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const seen = new Map<string, number>();
  const unanswered = new Map<string, number>();
  const overlapping: string[] = [];
  const sockets = new Set<Socket>();
  let answer = behaviour;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const request: ReceivedWebhook = {
        path: req.url ?? "/",
        headers: Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]),
        ),
        body: Buffer.concat(chunks).toString("utf8"),
        receivedAt: Date.now(),
      };
      // One delivery: an event (its webhook-id, the same for every subscription) to one subscription (its URL here).
      const id = `${request.path} ${request.headers["webhook-id"] ?? ""}`;
      const before = seen.get(id) ?? 0;
      seen.set(id, before + 1);
      received.push(request);
      if ((unanswered.get(id) ?? 0) > 0) overlapping.push(id);
      unanswered.set(id, (unanswered.get(id) ?? 0) + 1);
      res.once("close", () => unanswered.set(id, (unanswered.get(id) ?? 1) - 1));
      const decision = answer(request, before);
      if (decision === "hang") return;
      const {
        status,
        afterMs,
        headers = {},
        body = status < 300 ? "ok" : "no",
      } = typeof decision === "number" ? { status: decision, afterMs: 0 } : decision;
      const reply = () => res.writeHead(status, { "Content-Type": "text/plain", ...headers }).end(body);
      if (afterMs > 0) setTimeout(reply, afterMs);
      else reply();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host}:${port}`,
    received,
    overlapping,
    answerWith(next) {
      answer = next;
    },
    async waitFor(done, timeoutMs, describe = () => `${received.length} request(s) received`) {
      const deadline = Date.now() + timeoutMs;
      while (!done(received)) {
        if (Date.now() > deadline)
          throw new Error(`Timed out after ${timeoutMs} ms waiting for webhooks: ${describe()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
