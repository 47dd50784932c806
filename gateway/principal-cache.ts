/**
 * Short-lived cache of authenticated principals, keyed by the key's SHA-256, so a request
 * does not cost a call to the clients service. Revocation and rotation broadcast
 * `clients.changed`, which empties it at once on every gateway.
 */
import { createHash } from "node:crypto";
import type { Principal } from "../shared/auth";
import { ExpiringCache } from "../shared/expiring-cache";

const TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;

export class PrincipalCache {
  private readonly cache = new ExpiringCache<string, Principal>(TTL_MS, MAX_ENTRIES);

  static keyOf(apiKey: string): string {
    return createHash("sha256").update(apiKey).digest("hex");
  }

  get(apiKey: string): Principal | undefined {
    return this.cache.get(PrincipalCache.keyOf(apiKey));
  }

  set(apiKey: string, principal: Principal): void {
    this.cache.set(PrincipalCache.keyOf(apiKey), principal);
  }

  clear(): void {
    this.cache.clear();
  }
}
