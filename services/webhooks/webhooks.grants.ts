/**
 * The current grants (scopes and webhook events) of the clients that own subscriptions, as
 * the clients service knows them (`clients.principals`). Fan-out reads them through a cache of
 * GRANTS_TTL_MS, emptied for a client on its `clients.changed` broadcast; the dispatcher asks
 * afresh before each send, so a missed broadcast cannot make a revoked client receive anything.
 * When the clients service cannot be reached, the calls fail: nothing is decided on stale
 * grants (fan-out is retried by the channel, claimed deliveries wait for their lease to end).
 *
 * Each change heard here moves `version` on: whoever decided something on the grants it read
 * at a version can ask whether a client's changed since (webhooks.late-changes.ts).
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
  private changes = 0;
  /** The version at which each client last changed; one entry per client that changed while this process ran. */
  private readonly changedAt = new Map<number, number>();
  /** The version at which every client's grants were last forgotten at once. */
  private clearedAt = 0;

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
    const askedIn = this.changes;
    const found = new Map((await this.fetchPrincipals(unique)).map((p) => [p.clientId, p]));
    // An answer to a question asked before a change may predate it: not kept for the next reader.
    for (const id of unique) if (!this.changedSince(id, askedIn)) this.cache.set(id, found.get(id) ?? null, askedAt);
    return found;
  }

  /** How many changes this process has heard of: read it before the grants a decision rests on. */
  get version(): number {
    return this.changes;
  }

  /** Whether this client's grants changed (or all were forgotten) after `version`. */
  changedSince(clientId: number, version: number): boolean {
    return this.clearedAt > version || (this.changedAt.get(clientId) ?? 0) > version;
  }

  /** The client changed: its grants are asked for again. */
  forget(clientId: number): void {
    this.changedAt.set(clientId, ++this.changes);
    this.cache.delete(clientId);
  }

  /** Some client changed, which one unknown: every client's grants are asked for again. */
  clear(): void {
    this.clearedAt = ++this.changes;
    this.changedAt.clear();
    this.cache.clear();
  }
}

function activeOnly(known: Map<number, Principal | null>): Map<number, Principal> {
  const active = new Map<number, Principal>();
  for (const [id, p] of known) if (p) active.set(id, p);
  return active;
}
