/**
 * One webhook attempt against real sockets on this machine: the time-out covers the DNS check,
 * and a pooled keep-alive connection is used only for the address the latest check accepted.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { newEncryptionKeyEntry, parseEncryptionKeys, SecretBox } from "../../shared/security/secret-box";
import { sendWebhook, type OutgoingWebhook } from "../../services/webhooks/webhooks.sender";
import { useResolver, type ResolvedAddress } from "../../services/webhooks/webhooks.url-policy";

const box = new SecretBox(parseEncryptionKeys([newEncryptionKeyEntry("t")], "keys").keys);
const webhook = (url: string): OutgoingWebhook => ({
  url,
  event: "sales_order_validated",
  key: box.seal("whk_k"),
  secret: box.seal("whsec_c2VjcmV0c2VjcmV0c2VjcmV0"),
  webhookId: "msg_1",
  body: "{}",
});

/** A keep-alive HTTP server on one loopback address that counts the requests it answered. */
async function serverOn(host: string, port = 0): Promise<{ server: http.Server; port: number; hits: () => number }> {
  let hits = 0;
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    hits += 1;
    req.resume();
    res.writeHead(200, { connection: "keep-alive" }).end("ok");
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, hits: () => hits };
}

describe("webhook sender", () => {
  afterEach(() => useResolver(null));

  it("when the resolver never answers, then the attempt ends as a timeout within WEBHOOK_TIMEOUT_MS", async () => {
    useResolver(() => new Promise<ResolvedAddress[]>(() => undefined));
    // Without the deadline around the check this would never settle (and the test would time out).
    const outcome = await sendWebhook(webhook("https://hangs.example.com/in"), {
      timeoutMs: 300,
      allowInsecure: false,
      secrets: box,
    });
    expect(outcome).toMatchObject({ kind: "timeout", error: expect.stringContaining("300 ms") });
  });

  it("when a name starts resolving to another address, then the pooled connection to the old one is not reused", async () => {
    const first = await serverOn("127.0.0.1");
    const second = await serverOn("127.0.0.2", first.port);
    let answer: ResolvedAddress = { address: "127.0.0.1", family: 4 };
    useResolver(async () => [answer]);
    const url = `http://hooks.test:${first.port}/in`;
    const opts = { timeoutMs: 5_000, allowInsecure: true, secrets: box };
    try {
      expect(await sendWebhook(webhook(url), opts)).toMatchObject({ kind: "delivered" });
      expect(await sendWebhook(webhook(url), opts)).toMatchObject({ kind: "delivered" });
      answer = { address: "127.0.0.2", family: 4 };
      expect(await sendWebhook(webhook(url), opts)).toMatchObject({ kind: "delivered" });
      expect([first.hits(), second.hits()]).toEqual([2, 1]);
    } finally {
      for (const s of [first.server, second.server]) s.closeAllConnections();
      await Promise.all([first.server, second.server].map((s) => new Promise((r) => s.close(r))));
    }
  });

  it("when the receiver never answers, then the deadline ends the attempt as a timeout", async () => {
    const silent = http.createServer((req) => req.resume());
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/in`;
    try {
      const outcome = await sendWebhook(webhook(url), { timeoutMs: 300, allowInsecure: true, secrets: box });
      expect(outcome).toMatchObject({ kind: "timeout", error: "No answer within 300 ms." });
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });

  it("when one subscription is sent to again and again, then its sealed values are opened once, not per attempt", async () => {
    const receiver = await serverOn("127.0.0.1");
    const opened: string[] = [];
    const counting = { open: (sealed: string) => (opened.push(sealed), box.open(sealed)) };
    const stored = webhook(`http://127.0.0.1:${receiver.port}/in`);
    try {
      for (let i = 0; i < 3; i++)
        expect(
          await sendWebhook(
            { ...stored, webhookId: `msg_${i}` },
            { timeoutMs: 5_000, allowInsecure: true, secrets: counting },
          ),
        ).toMatchObject({ kind: "delivered" });
      expect(opened.sort()).toEqual([stored.key, stored.secret].sort());
      expect(receiver.hits()).toBe(3);
    } finally {
      receiver.server.closeAllConnections();
      await new Promise((r) => receiver.server.close(r));
    }
  });

  it("when the stored secret was sealed with a key that is not configured, then the attempt is an error naming the key id", async () => {
    const other = new SecretBox(parseEncryptionKeys([newEncryptionKeyEntry("gone")], "keys").keys);
    const outcome = await sendWebhook(
      { ...webhook("https://hooks.example.com/in"), secret: other.seal("whsec_x") },
      { timeoutMs: 1_000, allowInsecure: false, secrets: box },
    );
    expect(outcome).toMatchObject({ kind: "error", error: expect.stringContaining('"gone"') });
  });
});
