/**
 * Issue 12, part 2: a rotation keeps the replaced secret signing beside the new one for the
 * overlap (a receiver on either verifies), then only the new one; a subscription may ask for
 * Ed25519 `v1a` signatures, verified with the public key the API shows.
 */
import { createPublicKey, verify } from "node:crypto";
import type { Knex } from "knex";
import { Webhook } from "standardwebhooks";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { SecretBox } from "../../shared/security/secret-box";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type ReceivedWebhook, type WebhookReceiver } from "../helpers/webhook-receiver";

interface SubscriptionJson {
  id: number;
  key?: string;
  secret?: string;
  signature: string;
  publicKey: string | null;
  previousSecretUntil: string | null;
}

/** Verifies every `v1a` signature of the request with this `whpk_` key; true when one does. */
function ed25519Verifies(publicKey: string, request: ReceivedWebhook): boolean {
  const raw = Buffer.from(publicKey.replace(/^whpk_/, ""), "base64");
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  const content = Buffer.from(
    `${request.headers["webhook-id"]}.${request.headers["webhook-timestamp"]}.${request.body}`,
  );
  return request.headers["webhook-signature"]
    .split(" ")
    .filter((s) => s.startsWith("v1a,"))
    .some((s) => verify(null, content, key, Buffer.from(s.slice("v1a,".length), "base64")));
}

const verifiesWith = (secret: string | undefined, request: ReceivedWebhook) => {
  try {
    new Webhook(secret ?? "").verify(request.body, request.headers);
    return true;
  } catch {
    return false;
  }
};

describe("webhook signatures: rotation with overlap, Ed25519", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  let seq = 0;

  const call = <T>(action: string, params: object) => t.call<T>(action, params, partner);
  const subscribe = (path: string, extra: object = {}) =>
    call<SubscriptionJson>("webhooks.subscribe", {
      event: "sales_order_created",
      url: `${receiver.url}${path}`,
      ...extra,
    });

  /** Raises one event and returns the request the subscription at `path` received for it. */
  async function deliveredTo(path: string): Promise<ReceivedWebhook> {
    const marker = ++seq;
    await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { marker } }]);
    const match = (r: ReceivedWebhook) => r.path === path && r.body === JSON.stringify({ marker });
    await receiver.waitFor((all) => all.some(match), EVENTUALLY_MS);
    return receiver.received.find(match) as ReceivedWebhook;
  }

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: { WEBHOOK_DISPATCH_INTERVAL_MS: "50", OUTBOX_RELAY_INTERVAL_MS: "50" },
    });
    source = await addEventSource(t.broker, "webhooks_signatures_source");
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("when a secret is rotated, then during the overlap a delivery verifies with the new and the old secret, and after it with the new one only", async () => {
    const original = await subscribe("/rotating");
    const rotated = await call<SubscriptionJson>("webhooks.rotate", { id: original.id });
    expect(rotated.secret).not.toBe(original.secret);
    expect(Date.parse(rotated.previousSecretUntil ?? "") - Date.now()).toBeGreaterThan(23 * 3600_000);

    const during = await deliveredTo("/rotating");
    expect(during.headers["webhook-signature"]).toMatch(/^v1,\S+ v1,\S+$/);
    expect(verifiesWith(rotated.secret, during)).toBe(true);
    expect(verifiesWith(original.secret, during)).toBe(true);
    expect(during.headers["x-webhook-key"]).toBe(rotated.key);
    expect(during.headers["x-webhook-previous-key"]).toBe(original.key);

    // The overlap ends.
    await db
      .withSchema("webhooks")
      .table("subscriptions")
      .where({ id: original.id })
      .update({ previous_until: db.raw("now() - interval '1 second'") });
    const after = await deliveredTo("/rotating");
    expect(after.headers["webhook-signature"]).toMatch(/^v1,\S+$/);
    expect(verifiesWith(rotated.secret, after)).toBe(true);
    expect(verifiesWith(original.secret, after)).toBe(false);
    expect(after.headers["x-webhook-key"]).toBe(rotated.key);
    expect(after.headers).not.toHaveProperty("x-webhook-previous-key");
    expect((await call<SubscriptionJson>("webhooks.get", { id: original.id })).previousSecretUntil).toBeNull();
  });

  it("when a subscription asks for ed25519, then the API shows its public key, the private key is stored sealed, and deliveries carry a v1a signature that key verifies", async () => {
    const sub = await subscribe("/ed25519", { signature: "ed25519" });
    expect(sub).toMatchObject({ signature: "ed25519", publicKey: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/) });
    expect(await call<SubscriptionJson>("webhooks.get", { id: sub.id })).toMatchObject({
      signature: "ed25519",
      publicKey: sub.publicKey,
    });
    const stored: { signing_key: string } = await db
      .withSchema("webhooks")
      .table("subscriptions")
      .where({ id: sub.id })
      .first();
    expect(SecretBox.isSealed(stored.signing_key)).toBe(true);

    const request = await deliveredTo("/ed25519");
    expect(request.headers["webhook-signature"]).toMatch(/^v1a,\S+ v1,\S+$/);
    expect(ed25519Verifies(sub.publicKey ?? "", request)).toBe(true);
    // Another key pair's public key does not verify it.
    const other = await subscribe("/ed25519-other", { signature: "ed25519" });
    expect(ed25519Verifies(other.publicKey ?? "", request)).toBe(false);
    // The HMAC signature is still there, for receivers that use the secret.
    expect(verifiesWith(sub.secret, request)).toBe(true);
  });

  it("when an ed25519 subscription is rotated, then during the overlap both public keys verify; a plain one switches with `signature`", async () => {
    const sub = await subscribe("/ed25519-rotating", { signature: "ed25519" });
    const rotated = await call<SubscriptionJson>("webhooks.rotate", { id: sub.id });
    expect(rotated.publicKey).toMatch(/^whpk_/);
    expect(rotated.publicKey).not.toBe(sub.publicKey);
    const request = await deliveredTo("/ed25519-rotating");
    expect(request.headers["webhook-signature"].split(" ").map((s) => s.split(",")[0])).toEqual([
      "v1a",
      "v1",
      "v1a",
      "v1",
    ]);
    expect(ed25519Verifies(rotated.publicKey ?? "", request)).toBe(true);
    expect(ed25519Verifies(sub.publicKey ?? "", request)).toBe(true);

    const plain = await subscribe("/switching");
    expect(plain).toMatchObject({ signature: "hmac", publicKey: null });
    await expect(subscribe("/switching", { signature: "ed25519" })).rejects.toMatchObject({
      code: 409,
      data: { path: "signature" },
    });
    const switched = await call<SubscriptionJson>("webhooks.rotate", { id: plain.id, signature: "ed25519" });
    expect(switched).toMatchObject({ signature: "ed25519", publicKey: expect.stringMatching(/^whpk_/) });
  });

  it("when the signature scheme is unknown, then 422 names `signature`", async () => {
    await expect(subscribe("/bad", { signature: "rsa" })).rejects.toMatchObject({
      code: 422,
      data: [{ field: "signature" }],
    });
  });
});
