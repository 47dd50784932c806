/**
 * What Node's HTTP server refuses before any route runs is answered as a problem document
 * (gateway/client-errors.ts). Raw sockets: fetch would not send these requests.
 */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { answerClientErrors } from "../../gateway/client-errors";
import { SERVER_LIMITS } from "../../gateway/server-limits";
import { startTestBroker, type TestBroker } from "../helpers/broker";

interface RawAnswer {
  statusLine: string;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` as is (and keeps the socket open when `end` is false); resolves when the server closes. */
function exchange(port: number, request: string, end = true): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => (end ? socket.end(request) : socket.write(request)));
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("close", () => {
      const [head, body = ""] = text.split("\r\n\r\n");
      const [statusLine, ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      resolve({ statusLine, headers, body });
    });
    socket.on("error", reject);
  });
}

function expectProblem(answer: RawAnswer, status: number, slug: string): void {
  expect(answer.statusLine).toBe(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}`);
  expect(answer.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
  expect(answer.headers.connection).toBe("close");
  expect(Number(answer.headers["content-length"])).toBe(Buffer.byteLength(answer.body, "latin1"));
  const problem = JSON.parse(answer.body) as { type: string; status: number; title: string; detail: string };
  expect(problem).toEqual({ type: `/problems/${slug}`, status, title: expect.any(String), detail: expect.any(String) });
}

describe("the gateway's answers to what Node's server refuses", () => {
  let t: TestBroker;
  let port: number;

  beforeAll(async () => {
    t = await startTestBroker({ services: ["gateway"] });
    const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => t?.stop());

  it("when the headers are larger than the limit, then the answer is a 431 problem document and the connection closes", async () => {
    const big = "x".repeat(SERVER_LIMITS.maxHeaderSize + 1);
    const answer = await exchange(port, `GET /api/v1/orders HTTP/1.1\r\nHost: a\r\nX-Big: ${big}\r\n\r\n`);
    expectProblem(answer, 431, "headers-too-large");
    expect((JSON.parse(answer.body) as { detail: string }).detail).toContain(String(SERVER_LIMITS.maxHeaderSize));
  });

  it.each([
    ["a garbage request line", "HELLO THERE\r\n\r\n"],
    ["an unknown HTTP version", "GET /api/v1/orders HTTP/9.9\r\nHost: a\r\n\r\n"],
    ["a control character in the target", "GET /api/v1/orders\x01 HTTP/1.1\r\nHost: a\r\n\r\n"],
    [
      "two different Content-Lengths",
      "POST /api/v1/orders HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    ],
    ["a header without a colon", "GET /healthz HTTP/1.1\r\nHost: a\r\nNot a header\r\n\r\n"],
    ["a space inside a header name", "GET /healthz HTTP/1.1\r\nHost: a\r\nX Bad: 1\r\n\r\n"],
  ])("when a request has %s, then the answer is a 400 problem document", async (_what, request) => {
    expectProblem(await exchange(port, request), 400, "malformed-request");
  });
});

describe("a client too slow to send its headers", () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    // Short time-outs so the test need not wait for the gateway's own 10 s; the answer is the same code.
    server = http.createServer(
      { connectionsCheckingInterval: 50, headersTimeout: 200, requestTimeout: 300 },
      (_req, res) => res.end("routed"),
    );
    answerClientErrors(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("when the headers never end, then the answer is a 408 problem document and the connection closes", async () => {
    const answer = await exchange(port, "GET / HTTP/1.1\r\nHost: a\r\nX-Slow: 1\r\n", false);
    expectProblem(answer, 408, "request-timeout");
  });
});
