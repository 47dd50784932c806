/**
 * The one axios instance webhook requests go through (webhooks.http-client.ts): its defaults are
 * the fixed options alone (nothing of axios's global defaults to merge per request), and they
 * hold on real sockets: the body goes as given, any status is an answer, a redirect is not
 * followed, the answer is a stream, no proxy is used, and the deadline cuts the request.
 */
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { clientDefaults, FIXED_OPTIONS, postWebhook } from "../../services/webhooks/webhooks.http-client";

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
    expect(Object.keys(clientDefaults()).sort()).toEqual(Object.keys(FIXED_OPTIONS).sort());
    expect(clientDefaults()).toMatchObject({ maxRedirects: 0, proxy: false, responseType: "stream" });
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
});
