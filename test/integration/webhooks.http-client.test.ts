/**
 * The one axios instance webhook requests go through (webhooks.http-client.ts) and its adapter
 * (webhooks.http-transport.ts): its defaults are the fixed options alone (nothing of axios's
 * global defaults to merge per request), and on real sockets the body goes as given, any status
 * is an answer, a redirect is not followed, the answer is a stream (decoded if the receiver
 * compressed it anyway), no proxy is used, a refused connection is an AxiosError with its code,
 * and the deadline cuts the request and the reading of its answer.
 */
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import zlib from "node:zlib";
import { isAxiosError } from "axios";
import { clientDefaults, FIXED_OPTIONS, postWebhook } from "../../services/webhooks/webhooks.http-client";
import { webhookTransport } from "../../services/webhooks/webhooks.http-transport";

/** The whole answer, or the error that cut it. */
function readAll(stream: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    stream.once("error", reject);
  });
}

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe("webhook HTTP client", () => {
  let server: http.Server;
  let base: string;
  const received: Received[] = [];
  const agents = { httpAgent: new http.Agent({ keepAlive: true }), httpsAgent: new https.Agent({ keepAlive: true }) };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        if (req.url === "/moved") res.writeHead(302, { location: "/elsewhere" }).end();
        else if (req.url === "/failing") res.writeHead(500).end("broken");
        else if (req.url === "/slow") setTimeout(() => res.writeHead(200).end("late"), 2_000).unref();
        else if (req.url === "/gzipped")
          res.writeHead(200, { "content-encoding": "gzip" }).end(zlib.gzipSync("unpacked ✓"));
        // The head and a first chunk, then nothing: the answer is under way until cut.
        else if (req.url === "/endless") res.writeHead(200).write("start");
        else res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    agents.httpAgent.destroy();
    agents.httpsAgent.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (received.length = 0));

  const post = (path: string, body = '{"a":"ü"}', signal = new AbortController().signal) =>
    postWebhook({ url: `${base}${path}`, body, headers: { "Content-Type": "application/json" }, agents, signal });

  it("when the client is made, then its defaults are the fixed options and nothing else: no headers, no transforms to merge per request", () => {
    expect(Object.keys(clientDefaults()).sort()).toEqual(["adapter"]);
    expect(clientDefaults()).toEqual(FIXED_OPTIONS);
    expect(clientDefaults().adapter).toBe(webhookTransport);
  });

  it("when a body is posted, then it arrives byte for byte with our headers, and the answer is a stream", async () => {
    const body = JSON.stringify({ note: "ünïcödé ✓", n: 1.5 });
    const response = await post("/in", body);
    expect(response.status).toBe(200);
    expect(response.data).toBeInstanceOf(Readable);
    (response.data as Readable).resume();
    expect(received).toEqual([
      {
        path: "/in",
        headers: expect.objectContaining({
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "accept-encoding": "identity",
        }),
        body,
      },
    ]);
  });

  it("when the receiver answers 500 or redirects, then that is the answer: the redirect is not followed", async () => {
    const failing = await post("/failing");
    (failing.data as Readable).resume();
    const moved = await post("/moved");
    (moved.data as Readable).resume();
    expect([failing.status, moved.status, moved.headers.location]).toEqual([500, 302, "/elsewhere"]);
    expect(received.map((r) => r.path)).toEqual(["/failing", "/moved"]);
  });

  it("when HTTP_PROXY names a proxy, then the request still goes straight to the receiver", async () => {
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, http_proxy: process.env.http_proxy };
    process.env.HTTP_PROXY = process.env.http_proxy = "http://127.0.0.1:9";
    try {
      const response = await post("/in");
      (response.data as Readable).resume();
      expect(response.status).toBe(200);
    } finally {
      for (const [name, value] of Object.entries(saved))
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
  });

  it("when the signal aborts before the answer, then the request fails as cancelled", async () => {
    const controller = new AbortController();
    const answer = post("/slow", "{}", controller.signal);
    // Aborted once the receiver has the request: the abort, not the receiver, ends it.
    while (received.length === 0) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    await expect(answer).rejects.toMatchObject({ code: "ERR_CANCELED" });
  });

  it("when the receiver compresses its answer anyway, then the answer read is the decoded text", async () => {
    const response = await post("/gzipped");
    expect(response.headers["content-encoding"]).toBeUndefined();
    expect(await readAll(response.data as Readable)).toBe("unpacked ✓");
  });

  it("when the signal aborts while the answer is being read, then its reading is cut", async () => {
    const controller = new AbortController();
    const response = await post("/endless", "{}", controller.signal);
    const reading = readAll(response.data as Readable);
    controller.abort();
    await expect(reading).rejects.toMatchObject({ code: "ERR_CANCELED" });
  });

  it("when nothing listens at the address, then the request fails with the socket's code", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const refused = postWebhook({
      url: `http://127.0.0.1:${port}/in`,
      body: "{}",
      headers: {},
      agents,
      signal: new AbortController().signal,
    });
    const failure: unknown = await refused.catch((err: unknown) => err);
    expect(isAxiosError(failure)).toBe(true);
    expect(failure).toMatchObject({ code: "ECONNREFUSED" });
  });

  it("when the signal has already aborted, then nothing is sent", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(post("/in", "{}", controller.signal)).rejects.toMatchObject({ code: "ERR_CANCELED" });
    expect(received).toEqual([]);
  });
});
