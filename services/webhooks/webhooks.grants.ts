/**
 * The current grants (scopes and webhook events) of the clients that own subscriptions, as
 * the clients service knows them (`clients.principals`). Fan-out reads them through a cache of
 * GRANTS_TTL_MS, emptied for a client on its `clients.changed` broadcast; the dispatcher asks
 * afresh before each send, so a missed broadcast cannot make a revoked client receive anything.
 * When the clients service cannot be reached, the calls fail: nothing is decided on stale
 * grants (fan-out is retried by the channel, claimed deliveries wait for their lease to end).
 */
import type { Principal } from "../../shared/security/auth";
import { ExpiringCache } from "../../shared/expiring-cache";

/** As short as the gateway's principal cache: a change holds everywhere within 2 s. */
export const GRANTS_TTL_MS = 1_000;
const MAX_ENTRIES = 10_000;

/** The active principals among these client ids; revoked and unknown ones are left out. */
export type FetchPrincipals = (ids: number[]) => Promise<Principal[]>;

export class ClientGrants {
  /** `null`: known to be revoked or unknown, so it is not asked for on every event. */
  private readonly cache = new ExpiringCache<number, Principal | null>(GRANTS_TTL_MS, MAX_ENTRIES);

  constructor(private readonly fetchPrincipals: FetchPrincipals) {}

  /** The principals of these clients, from the cache where it has them. */
  async cached(ids: number[]): Promise<Map<number, Principal>> {
    const known = new Map<number, Principal | null>();
    const missing: number[] = [];
    for (const id of new Set(ids)) {
      const hit = this.cache.get(id);
      if (hit === undefined) missing.push(id);
      else known.set(id, hit);
    }
    if (missing.length > 0) for (const [id, p] of await this.fresh(missing)) known.set(id, p);
    return activeOnly(known);
  }

  /** The principals of these clients as the clients service answers right now (and cached). */
  async fresh(ids: number[]): Promise<Map<number, Principal>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    // Expiring from the moment they were asked for: a slow answer does not make them older than the TTL.
    const askedAt = Date.now();
    const found = new Map((await this.fetchPrincipals(unique)).map((p) => [p.clientId, p]));
    for (const id of unique) this.cache.set(id, found.get(id) ?? null, askedAt);
    return found;
  }

  forget(clientId: number): void {
    this.cache.delete(clientId);
  }

  clear(): void {
    this.cache.clear();
  }
}

function activeOnly(known: Map<number, Principal | null>): Map<number, Principal> {
  const active = new Map<number, Principal>();
  for (const [id, p] of known) if (p) active.set(id, p);
  return active;
}
