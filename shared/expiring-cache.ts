/**
 * A bounded in-process cache whose entries expire. For data owned by another service, kept
 * only to save a call; whoever changes that data broadcasts, and listeners drop the entries.
 */
export class ExpiringCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();
  /** getOrLoad's loads under way: the callers that miss one key meanwhile share its load. */
  private readonly loads = new Map<K, Promise<V>>();
  /** Counts the removals (delete, clear, deleteWhere): a load or fetch begun before one is not stored. */
  private removals = 0;

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

  /**
   * @param readAt when the value was read at its source (default: now). It expires ttlMs after
   *   that, so a slow load cannot make an entry older than ttlMs when it is used.
   */
  set(key: K, value: V, readAt = Date.now()): void {
    // Crude but bounded: when full, start again rather than track recency.
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.clear();
    this.entries.set(key, { value, expires: readAt + this.ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
    this.removed();
  }

  clear(): void {
    this.entries.clear();
    this.removed();
  }

  /** Drops every entry whose value matches: a change to one owner, without emptying the rest. */
  deleteWhere(matches: (value: V) => boolean): void {
    for (const [key, hit] of this.entries) if (matches(hit.value)) this.entries.delete(key);
    this.removed();
  }

  /**
   * The value for `key`: cached, else from `load`, one load per key at a time, which the
   * callers that miss the key meanwhile wait for instead of each loading it. A failed load is
   * not kept; a kept one expires ttlMs after the load began. After a removal, callers load afresh, and a load begun before it is used by its
   * own callers only, not stored: it may predate the change the removal stands for.
   */
  getOrLoad(key: K, load: () => Promise<V>): Promise<V> {
    const cached = this.get(key);
    if (cached !== undefined) return Promise.resolve(cached);
    const underWay = this.loads.get(key);
    if (underWay) return underWay;
    const removalsBefore = this.removals;
    const startedAt = Date.now();
    const loading = load()
      .then((value) => {
        if (this.removals === removalsBefore) this.set(key, value, startedAt);
        return value;
      })
      .finally(() => {
        if (this.loads.get(key) === loading) this.loads.delete(key);
      });
    this.loads.set(key, loading);
    return loading;
  }

  private removed(): void {
    this.removals += 1;
    this.loads.clear();
  }

  /**
   * The values for `keys`: cached ones, and the missing ones fetched in one call and cached.
   * Keys that `fetch` does not return are simply absent. Like getOrLoad's, a fetch begun before
   * a removal is used by its caller but not stored: it may predate the change.
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
      const removalsBefore = this.removals;
      const startedAt = Date.now();
      const fetched = await fetch(missing);
      const keep = this.removals === removalsBefore;
      for (const value of fetched) {
        if (keep) this.set(keyOf(value), value, startedAt);
        found.push(value);
      }
    }
    return found;
  }
}
