/**
 * Keys and signatures of webhook requests, in the Standard Webhooks form
 * (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of random bytes, and
 * `webhook-signature` is `v1,` + base64(HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")).
 * A subscription may also hold an Ed25519 key pair: it adds `v1a,` + base64(Ed25519 signature
 * of the same content), which a receiver verifies with the public key alone (`whpk_` + base64
 * of its 32 bytes). Several signatures are separated by spaces; a receiver accepts the request
 * when any of them verifies (docs/webhooks.md).
 */
import { createHmac, createPrivateKey, generateKeyPairSync, randomBytes, sign as signWithKey } from "node:crypto";

const SECRET_PREFIX = "whsec_";
const KEY_PREFIX = "whk_";
const PUBLIC_KEY_PREFIX = "whpk_";

/** The signature schemes a subscription can ask for: HMAC only, or Ed25519 beside it. */
export const SIGNATURE_SCHEMES = ["hmac", "ed25519"] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** The value sent as X-WEBHOOK-KEY: a per-subscription token the receiver compares. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(24).toString("base64url");
}

/** A signing secret: 32 random bytes (the Standard Webhooks range is 24 to 64). */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

export interface SigningKeyPair {
  /** PKCS#8 DER in base64: stored sealed, never shown. */
  privateKey: string;
  /** `whpk_` + base64 of the raw 32-byte public key: shown by the API. */
  publicKey: string;
}

export function generateSigningKeyPair(): SigningKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  // The SPKI DER of an Ed25519 key ends with its 32 raw bytes.
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  return {
    privateKey: privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
    publicKey: PUBLIC_KEY_PREFIX + raw.toString("base64"),
  };
}

const signedContent = (webhookId: string, timestamp: number, body: string) => `${webhookId}.${timestamp}.${body}`;

/** `v1,<signature>` of one request. `timestamp` is in whole seconds since the epoch. */
export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
  const digest = createHmac("sha256", key)
    .update(signedContent(webhookId, timestamp, body), "utf8")
    .digest("base64");
  return `v1,${digest}`;
}

/** `v1a,<signature>` of one request with an Ed25519 private key (PKCS#8 DER in base64). */
export function signAsymmetric(privateKey: string, webhookId: string, timestamp: number, body: string): string {
  const key = createPrivateKey({ key: Buffer.from(privateKey, "base64"), format: "der", type: "pkcs8" });
  return `v1a,${signWithKey(null, Buffer.from(signedContent(webhookId, timestamp, body), "utf8"), key).toString("base64")}`;
}

/** What signs one request, opened: the current values, and those a rotation replaced while its overlap lasts. */
export interface SigningMaterial {
  secret: string;
  signingKey?: string | null;
  previous?: { secret: string; signingKey?: string | null } | null;
}

/**
 * The `webhook-signature` value: the asymmetric signature first when there is a key pair, then
 * the HMAC; during a rotation's overlap the previous values' signatures follow the current ones.
 */
export function signatureHeader(m: SigningMaterial, webhookId: string, timestamp: number, body: string): string {
  const generations = m.previous ? [m, m.previous] : [m];
  const signatures = generations.flatMap((g) => [
    ...(g.signingKey ? [signAsymmetric(g.signingKey, webhookId, timestamp, body)] : []),
    sign(g.secret, webhookId, timestamp, body),
  ]);
  return signatures.join(" ");
}
