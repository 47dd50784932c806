/**
 * Keys and signatures of webhook requests, in the Standard Webhooks form
 * (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of random bytes, and
 * `webhook-signature` is `v1,` + base64(HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")).
 * A subscription may also hold an Ed25519 key pair: it adds `v1a,` + base64(Ed25519 signature
 * of the same content), which a receiver verifies with the public key alone (`whpk_` + base64
 * of its 32 bytes). Several signatures are separated by spaces; a receiver accepts the request
 * when any of them verifies (docs/webhooks.md).
 */
import {
  createHmac,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign as signWithKey,
  type KeyObject,
} from "node:crypto";

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

/** The HMAC key: the secret's bytes (base64 after the `whsec_` prefix). */
function hmacKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
}

const hmacSignature = (key: Buffer, content: string) =>
  `v1,${createHmac("sha256", key).update(content, "utf8").digest("base64")}`;

const ed25519Signature = (key: KeyObject, content: string) =>
  `v1a,${signWithKey(null, Buffer.from(content, "utf8"), key).toString("base64")}`;

/** `v1,<signature>` of one request. `timestamp` is in whole seconds since the epoch. */
export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  return hmacSignature(hmacKey(secret), signedContent(webhookId, timestamp, body));
}

/** The Ed25519 private key (PKCS#8 DER in base64) as a key object: decoding it costs more than a signature. */
function ed25519Key(privateKey: string): KeyObject {
  return createPrivateKey({ key: Buffer.from(privateKey, "base64"), format: "der", type: "pkcs8" });
}

/** What signs one request, opened: the current values, and those a rotation replaced while its overlap lasts. */
export interface SigningMaterial {
  secret: string;
  signingKey?: string | null;
  previous?: { secret: string; signingKey?: string | null } | null;
}

/** Gives one request's `webhook-signature` value. */
export type Signer = (webhookId: string, timestamp: number, body: string) => string;

/**
 * The signer of one subscription's material, its keys decoded once (a sender keeps it with the
 * subscription's other opened values, webhooks.opened-subscription.ts). It writes the
 * asymmetric signature first when there is a key pair, then the HMAC; during a rotation's
 * overlap the previous values' signatures follow the current ones.
 */
export function signerFor(m: SigningMaterial): Signer {
  const generations = m.previous ? [m, m.previous] : [m];
  const signers = generations.flatMap((g) => {
    const hmac = hmacKey(g.secret);
    const ed25519 = g.signingKey ? ed25519Key(g.signingKey) : null;
    return [
      ...(ed25519 ? [(content: string) => ed25519Signature(ed25519, content)] : []),
      (content: string) => hmacSignature(hmac, content),
    ];
  });
  return (webhookId, timestamp, body) => {
    const content = signedContent(webhookId, timestamp, body);
    return signers.length === 1 ? signers[0](content) : signers.map((signOne) => signOne(content)).join(" ");
  };
}
