/**
 * Keys and signatures of webhook requests, in the Standard Webhooks form
 * (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of random bytes, and
 * `webhook-signature` is `v1,` + base64(HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")).
 * Receivers verify it with any Standard Webhooks library (docs/webhooks.md).
 */
import { createHmac, randomBytes } from "node:crypto";

const SECRET_PREFIX = "whsec_";
const KEY_PREFIX = "whk_";

/** The value sent as X-WEBHOOK-KEY: a per-subscription token the receiver compares. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(24).toString("base64url");
}

/** A signing secret: 32 random bytes (the Standard Webhooks range is 24 to 64). */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** `v1,<signature>` of one request. `timestamp` is in whole seconds since the epoch. */
export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
  const digest = createHmac("sha256", key).update(`${webhookId}.${timestamp}.${body}`, "utf8").digest("base64");
  return `v1,${digest}`;
}
