/**
 * A Map bounded to `maxEntries`: a read or a write makes an entry the most recent, and the least
 * recently used one is let go beyond the bound. For values that are costly to make and never go
 * stale, only too many (pooled connections by address, opened secrets by their sealed text).
 */
export class LeastRecentlyUsed<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      // A Map iterates in insertion order: re-inserting moves the entry to the recent end.
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** The value for `key`, made by `make` when there is none; a `make` that throws stores nothing. */
  getOrMake(key: K, make: () => V): V {
    const known = this.get(key);
    if (known !== undefined) return known;
    const made = make();
    this.set(key, made);
    return made;
  }
}
