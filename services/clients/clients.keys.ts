/**
 * API keys: 32 random bytes, shown once, stored only as SHA-256 (a key is a high-entropy
 * secret, so a slow hash buys nothing), compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const KEY_PREFIX = "oik_";

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString("base64url");
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Index column used to find candidate rows without revealing the hash. */
export function lookupOf(hash: string): string {
  return hash.slice(0, 12);
}

/** What a listing may show of a key. */
export function hintOf(key: string): string {
  return `${key.slice(0, 8)}…`;
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}
