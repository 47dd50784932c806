/**
 * Short-lived cache of authenticated principals, keyed by the key's SHA-256, so a request
 * does not cost a call to the clients service. Revocation and rotation broadcast
 * `clients.changed`, which empties it at once on every gateway.
 */
import { createHash } from "node:crypto";
import type { Principal } from "../shared/auth";

const TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;

export class PrincipalCache {
  private readonly entries = new Map<string, { principal: Principal; expires: number }>();

  static keyOf(apiKey: string): string {
    return createHash("sha256").update(apiKey).digest("hex");
  }

  get(apiKey: string): Principal | undefined {
    const k = PrincipalCache.keyOf(apiKey);
    const hit = this.entries.get(k);
    if (!hit) return undefined;
    if (hit.expires < Date.now()) {
      this.entries.delete(k);
      return undefined;
    }
    return hit.principal;
  }

  set(apiKey: string, principal: Principal): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(PrincipalCache.keyOf(apiKey), { principal, expires: Date.now() + TTL_MS });
  }

  clear(): void {
    this.entries.clear();
  }
}
