/**
 * A caller without a valid key, or without the route's scope, cannot make the gateway read a
 * body: requests that carry one are admitted, and their scope checked, before the body parser
 * runs (gateway.service.ts, admitBeforeBody). The bodies here are left unfinished on purpose:
 * were they read first, no answer would ever come.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { BODY_LIMIT_BYTES } from "../../gateway/body-parser";
import { startTestBroker, type TestBroker } from "../helpers/broker";

const ADMIN_KEY = "auth-before-body-admin-key-0123456789";

let t: TestBroker;
let port: number;

beforeAll(async () => {
  t = await startTestBroker({ services: ["gateway", "clients"], env: { ADMIN_API_KEY: ADMIN_KEY } });
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  port = (server.address() as AddressInfo).port;
}, 60_000);
afterAll(() => t?.stop());

/** A chunked body's data (moleculer-web answers without Content-Length). */
function dechunked(raw: string): string {
  let data = "";
  for (let at = 0; ;) {
    const lineEnd = raw.indexOf("\r\n", at);
    const size = parseInt(raw.slice(at, lineEnd), 16);
    if (!(size > 0)) return data;
    data += raw.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

/** Sends the headers and the first chunk of a chunked body; `rest` (if any) once the first bytes are out. */
function postChunked(authorization: string | null, rest: string | null): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(
        [
          "POST /api/v1/clients HTTP/1.1",
          "Host: a",
          "Content-Type: application/json",
          "Transfer-Encoding: chunked",
          "Connection: close",
          ...(authorization ? [`Authorization: ${authorization}`] : []),
          "",
          "1",
          "{",
          "",
        ].join("\r\n"),
      );
      if (rest !== null) socket.write(`${rest.length.toString(16)}\r\n${rest}\r\n0\r\n\r\n`);
    });
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString()));
    // Connection: close, so the answer ends with the connection.
    socket.on("end", () => {
      socket.destroy();
      const end = text.indexOf("\r\n\r\n");
      resolve({ head: text.slice(0, end), body: dechunked(text.slice(end + 4)) });
    });
    socket.on("error", reject);
  });
}

it.each([
  ["no key", null],
  ["an unknown key", "Bearer not-a-key-of-anyone-0123456789"],
  ["a malformed Authorization header", "Basic dXNlcjpwYXNz"],
])(
  "when a request with %s sends a body it never finishes, then it is answered 401 without the body being waited for",
  async (_what, authorization) => {
    const answer = await postChunked(authorization, null);
    expect(answer.head.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
    expect(answer.head).toMatch(/^WWW-Authenticate: Bearer/im);
    expect(JSON.parse(answer.body)).toMatchObject({ type: "/problems/unauthenticated", status: 401 });
  },
);

it("when a request with a valid key sends its body, then the body is read after admission: an unfinished JSON object is a 400", async () => {
  const answer = await postChunked(`Bearer ${ADMIN_KEY}`, '"name":');
  expect(answer.head.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
  expect(JSON.parse(answer.body)).toMatchObject({ type: "/problems/malformed-request", status: 400 });
});

describe("the scope is checked before the body (docs/api.md: 403 before 400, 413, 415)", () => {
  let partnerKey: string;
  beforeAll(async () => {
    partnerKey = (await t.call<{ apiKey: string }>("clients.create", { name: "No admin", kind: "partner" })).apiKey;
  });

  it("when a key without the route's scope sends a body it never finishes, then it is 403 without the body being waited for", async () => {
    const answer = await postChunked(`Bearer ${partnerKey}`, null);
    expect(answer.head.split("\r\n")[0]).toBe("HTTP/1.1 403 Forbidden");
    expect(JSON.parse(answer.body)).toMatchObject({ type: "/problems/forbidden", requiredScope: "admin" });
  });

  it.each([
    ["malformed JSON", "application/json", "{not json"],
    ["a media type that is not JSON", "text/plain", "a note"],
    ["a body over 1 MiB", "application/json", JSON.stringify({ name: "x".repeat(BODY_LIMIT_BYTES) })],
  ])("when a key without the route's scope sends %s, then it is 403 naming the scope", async (_what, type, body) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/clients`, {
      method: "POST",
      headers: { authorization: `Bearer ${partnerKey}`, "content-type": type },
      body,
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ type: "/problems/forbidden", requiredScope: "admin" });
  });

  it("when the key has the scope, then the same bodies are 400, 415 and 413", async () => {
    const send = (type: string, body: string) =>
      fetch(`http://127.0.0.1:${port}/api/v1/clients`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": type },
        body,
      }).then((r) => r.status);
    expect(await send("application/json", "{not json")).toBe(400);
    expect(await send("text/plain", "a note")).toBe(415);
    expect(await send("application/json", JSON.stringify({ name: "x".repeat(BODY_LIMIT_BYTES) }))).toBe(413);
  });
});
