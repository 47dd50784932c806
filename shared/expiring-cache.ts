/**
 * A bounded in-process cache whose entries expire. For data owned by another service, kept
 * only to save a call; whoever changes that data broadcasts, and listeners drop the entries.
 */
export class ExpiringCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires < Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return hit.value;
  }

  set(key: K, value: V): void {
    // Crude but bounded: when full, start again rather than track recency.
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.clear();
    this.entries.set(key, { value, expires: Date.now() + this.ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Drops every entry whose value matches: a change to one owner, without emptying the rest. */
  deleteWhere(matches: (value: V) => boolean): void {
    for (const [key, hit] of this.entries) if (matches(hit.value)) this.entries.delete(key);
  }

  /**
   * The values for `keys`: cached ones, and the missing ones fetched in one call and cached.
   * Keys that `fetch` does not return are simply absent.
   */
  async getMany(keys: K[], fetch: (missing: K[]) => Promise<V[]>, keyOf: (value: V) => K): Promise<V[]> {
    const found: V[] = [];
    const missing: K[] = [];
    for (const key of new Set(keys)) {
      const value = this.get(key);
      if (value === undefined) missing.push(key);
      else found.push(value);
    }
    if (missing.length > 0) {
      for (const value of await fetch(missing)) {
        this.set(keyOf(value), value);
        found.push(value);
      }
    }
    return found;
  }
}
