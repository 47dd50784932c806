/**
 * Short-lived cache of authenticated principals, keyed by the key's SHA-256, so a request
 * does not cost a call to the clients service.
 *
 * Authorization is decided at the moment of use, within 2 s of any change to a client
 * (docs/api.md, "Revocation and changes"): every change broadcasts `clients.changed`, which
 * drops that client's principals at once; a gateway that misses the broadcast (it is
 * fire-and-forget) still re-authenticates after TTL_MS. The price of the short TTL is one
 * `clients.authenticate` call (one indexed SELECT) per active key per second per gateway —
 * measured in docs/api.md ("Revocation and changes") — against a stale key living 30 s before.
 */
import { apiKeyHash } from "../shared/security/api-key-digest";
import type { Principal } from "../shared/security/auth";
import { ExpiringCache } from "../shared/expiring-cache";

export const PRINCIPAL_TTL_MS = 1_000;
const MAX_ENTRIES = 10_000;

export class PrincipalCache {
  private readonly cache: ExpiringCache<string, Principal>;

  constructor(ttlMs = PRINCIPAL_TTL_MS) {
    this.cache = new ExpiringCache<string, Principal>(ttlMs, MAX_ENTRIES);
  }

  /**
   * The key's principal: cached, else from `lookUp`, one call per key at a time. Without that,
   * every request that came in with a key while its entry was being renewed made a call of its
   * own: under load, tens per key per second, and as many held by a replica that died. After a
   * change of a client, requests look up afresh (ExpiringCache.getOrLoad).
   */
  resolve(apiKey: string, lookUp: (apiKey: string) => Promise<Principal>): Promise<Principal> {
    return this.cache.getOrLoad(apiKeyHash(apiKey), () => lookUp(apiKey));
  }

  /** This client changed: its keys are authenticated afresh on their next request. */
  forget(clientId: number): void {
    this.cache.deleteWhere((p) => p.clientId === clientId);
  }

  clear(): void {
    this.cache.clear();
  }
}
