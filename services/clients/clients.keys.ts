/**
 * API keys: 32 random bytes, shown once, stored only as their SHA-256 and its lookup digest
 * (shared/security/api-key-digest.ts), compared in constant time.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

export const KEY_PREFIX = "oik_";

export function generateApiKey(): string {
  return generateToken(KEY_PREFIX);
}

/** A bearer token of 32 random bytes: API keys, portal links and sessions, told apart by prefix. */
export function generateToken(prefix: string): string {
  return prefix + randomBytes(32).toString("base64url");
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
