/**
 * Webhook keys and secrets at rest: what the database holds (a dump alone reveals neither),
 * that deliveries still sign with the clear secret, the key rotation with the CLI's
 * `secrets reencrypt`, and the migration that encrypts rows stored in clear (and its down).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { newEncryptionKeyEntry, parseEncryptionKeys, SecretBox } from "../../shared/security/secret-box";
import { secretBox } from "../../shared/security/secrets-keyring";
import * as encryptSecrets from "../../services/webhooks/migrations/20261124000000_encrypt_secrets";
import { sendWebhook } from "../../services/webhooks/webhooks.sender";
import { rewriteStoredSecrets } from "../../services/webhooks/webhooks.secrets-at-rest";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { TEST_SECRETS_ENCRYPTION_KEYS } from "../helpers/processes";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const CLI = path.resolve(__dirname, "../../dist/runtime/cli.js");
const boxOf = (...entries: string[]) => new SecretBox(parseEncryptionKeys(entries, "keys").keys);

interface Stored {
  id: number;
  url: string;
  key: string;
  secret: string;
}

describe("webhook secrets at rest", () => {
  let t: TestBroker;
  let receiver: WebhookReceiver;
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  const stored = async (): Promise<Stored[]> =>
    openDatabase(t.database.url)("webhooks.subscriptions").select("id", "url", "key", "secret").orderBy("id");
  const subscribe = (path: string) =>
    t.broker.call<{ id: number; key: string; secret: string }, object>(
      "webhooks.subscribe",
      { event: "sales_order_validated", url: `${receiver.url}${path}` },
      { meta: { client: partner } },
    );

  /** Sends one request as the dispatcher would, from the row as stored. */
  async function deliverFrom(row: Stored, secrets: SecretBox) {
    const body = JSON.stringify({ id: row.id });
    return sendWebhook(
      {
        url: row.url,
        event: "sales_order_validated",
        key: row.key,
        secret: row.secret,
        webhookId: `msg_${row.id}_${Date.now()}`,
        body,
      },
      { timeoutMs: 5_000, allowInsecure: true, secrets },
    );
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await startTestBroker({ services: ["webhooks"] });
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("when a client subscribes, then the database holds neither its key nor its secret in clear, and a delivery verifies with the secret", async () => {
    const sub = await subscribe("/at-rest");
    const row = (await stored()).find((r) => r.id === sub.id)!;
    const dump = JSON.stringify(await stored());
    expect(dump).not.toContain(sub.key);
    expect(dump).not.toContain(sub.secret);
    expect(dump).not.toContain(sub.secret.replace(/^whsec_/, ""));
    expect([row.key, row.secret]).toEqual([expect.stringMatching(/^v1\.test\./), expect.stringMatching(/^v1\.test\./)]);

    expect(await deliverFrom(row, secretBox())).toMatchObject({ kind: "delivered" });
    const request = receiver.received.at(-1)!;
    expect(request.headers["x-webhook-key"]).toBe(sub.key);
    expect(new Webhook(sub.secret).verify(request.body, request.headers)).toEqual({ id: row.id });
  });

  it("when a key is rotated with the CLI, then every value moves to the new key and still signs correctly; the old key alone no longer opens them", async () => {
    const sub = await subscribe("/rotated");
    const newKey = newEncryptionKeyEntry("k2");
    const rotated = boxOf(newKey, TEST_SECRETS_ENCRYPTION_KEYS);
    if (t.database.kind === "pglite") {
      // An in-memory database cannot be reached from another process: the CLI's own step.
      await rewriteStoredSecrets(openDatabase(t.database.url), (v) => rotated.reseal(v));
    } else {
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          [CLI, "secrets", "reencrypt"],
          {
            env: {
              PATH: process.env.PATH,
              DATABASE_URL: t.database.url,
              SECRETS_ENCRYPTION_KEYS: `${newKey},${TEST_SECRETS_ENCRYPTION_KEYS}`,
              LOG_LEVEL: "warn",
            },
            timeout: 60_000,
          },
          (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
        ),
      );
      expect(out).toMatch(/Re-encrypted \d+ webhook subscription\(s\) with the key "k2"/);
    }
    const rows = await stored();
    const sealedWithK2 = { key: expect.stringMatching(/^v1\.k2\./), secret: expect.stringMatching(/^v1\.k2\./) };
    for (const r of rows) expect({ id: r.id, key: r.key, secret: r.secret }).toEqual({ id: r.id, ...sealedWithK2 });

    const row = rows.find((r) => r.id === sub.id)!;
    expect(await deliverFrom(row, boxOf(newKey))).toMatchObject({ kind: "delivered" });
    const request = receiver.received.at(-1)!;
    expect(new Webhook(sub.secret).verify(request.body, request.headers)).toEqual({ id: row.id });
    expect(await deliverFrom(row, boxOf(TEST_SECRETS_ENCRYPTION_KEYS))).toMatchObject({
      kind: "error",
      error: expect.stringContaining('key "k2"'),
    });

    // Back to the test key, for the next test.
    await rewriteStoredSecrets(openDatabase(t.database.url), (v) =>
      boxOf(TEST_SECRETS_ENCRYPTION_KEYS, newKey).reseal(v),
    );
  });

  it("when rows were stored in clear, then the migration encrypts them and its down gives them back in clear", async () => {
    const db = openDatabase(t.database.url);
    const [plain] = await db("webhooks.subscriptions")
      .insert({
        client_id: partner.clientId,
        event: "sales_order_validated",
        url: `${receiver.url}/legacy`,
        key: "whk_legacy",
        secret: "whsec_bGVnYWN5bGVnYWN5bGVnYWN5",
      })
      .returning<{ id: number }[]>("id");
    const byId = async () => (await stored()).find((r) => r.id === plain.id)!;

    await encryptSecrets.up(db);
    const sealed = await byId();
    expect(JSON.stringify([sealed.key, sealed.secret])).not.toMatch(/legacy|bGVnYWN5/);
    expect(secretBox().open(sealed.key)).toBe("whk_legacy");

    await encryptSecrets.down(db);
    expect(await byId()).toMatchObject({ key: "whk_legacy", secret: "whsec_bGVnYWN5bGVnYWN5bGVnYWN5" });
    expect((await stored()).filter((r) => SecretBox.isSealed(r.key)).map((r) => r.id)).toEqual([]);
    await encryptSecrets.up(db);
    expect(
      (await stored()).filter((r) => !SecretBox.isSealed(r.key) || !SecretBox.isSealed(r.secret)).map((r) => r.id),
    ).toEqual([]);
  });
});
