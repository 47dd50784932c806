import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { SERVER_LIMITS } from "../../gateway/server-limits";
import { startTestBroker, type TestBroker } from "../helpers/broker";

/** The status line of the answer to a raw request (fetch refuses to send some of these). */
function rawStatus(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.end(request));
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString()));
    socket.on("close", () => resolve(text.split("\r\n")[0]));
    socket.on("error", reject);
  });
}

describe("the gateway's HTTP server limits", () => {
  let t: TestBroker;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    t = await startTestBroker({ services: ["gateway"] });
    server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => t?.stop());

  it("when the gateway starts, then its server has the documented header and time limits, not Node's defaults", () => {
    expect(server.maxHeadersCount).toBe(SERVER_LIMITS.maxHeadersCount);
    expect(server.headersTimeout).toBe(SERVER_LIMITS.headersTimeoutMs);
    expect(server.requestTimeout).toBe(SERVER_LIMITS.requestTimeoutMs);
  });

  it("when a request's headers are larger than the limit, then it is refused with 431 and nothing routes it", async () => {
    const big = "x".repeat(SERVER_LIMITS.maxHeaderSize + 1);
    expect(await rawStatus(port, `GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ${big}\r\n\r\n`)).toBe(
      "HTTP/1.1 431 Request Header Fields Too Large",
    );
    const fits = "x".repeat(SERVER_LIMITS.maxHeaderSize / 2);
    expect(
      await rawStatus(port, `GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\nX-Big: ${fits}\r\n\r\n`),
    ).toBe("HTTP/1.1 200 OK");
  });
});
