/**
 * What an API key is known by once it has been shown: its SHA-256 (the clients service stores
 * only that; a key is a high-entropy secret, so a slow hash buys nothing) and the first
 * LOOKUP_LENGTH hex digits of it, the `lookup` column the clients service finds a key's row by.
 *
 * The gateway uses the same two: the hash keys its principal cache, and the lookup digests of
 * every active key tell it, without a lookup, whether a presented key may exist at all
 * (gateway/active-keys.ts). 48 bits say nothing useful about a key or its hash, and a random key
 * matches one of n active keys with a chance of n / 2^48.
 */
import { createHash } from "node:crypto";

const LOOKUP_LENGTH = 12;

export function apiKeyHash(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The lookup digest of a key's hash. */
export function lookupOf(hash: string): string {
  return hash.slice(0, LOOKUP_LENGTH);
}
