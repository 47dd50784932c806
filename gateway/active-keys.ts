/**
 * Which API keys exist, known without a lookup per key: the lookup digests of every active key
 * (shared/security/api-key-digest.ts), fetched from the clients service as one list.
 *
 * The failed-authentication throttle asks it once a source has failed too often: a key whose
 * digest is listed may be valid and is looked up (a valid key is never locked out by what others
 * did from its address or with its first characters); any other key cannot be valid and is
 * refused without a lookup. So a guesser costs at most one reload of the list per
 * MIN_RELOAD_MS, whatever the number of keys it tries. The list is loaded only when a throttled
 * source needs it, kept at most MAX_AGE_MS, and dropped when a client changes (the
 * `clients.changed` broadcast), so a revoked key stops passing with it; a key created since the
 * last load is found by the reload its first miss makes (within MIN_RELOAD_MS).
 */
import { apiKeyHash, lookupOf } from "../shared/security/api-key-digest";

export const MIN_RELOAD_MS = 5_000;
const MAX_AGE_MS = 60_000;

export type LoadLookups = () => Promise<string[]>;

export class ActiveKeys {
  private lookups = new Set<string>();
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | null = null;
  /** Counts forget(): a load begun before one may list a key revoked since, so it is not kept. */
  private changes = 0;

  constructor(
    private readonly load: LoadLookups,
    private readonly onLoadError: (err: unknown) => void,
  ) {}

  /** False when the key is certainly not an active key; true when it may be one. */
  async mayExist(apiKey: string): Promise<boolean> {
    const lookup = lookupOf(apiKeyHash(apiKey));
    if (this.age() >= MAX_AGE_MS) await this.reload();
    if (this.lookups.has(lookup)) return true;
    if (this.age() < MIN_RELOAD_MS) return false;
    await this.reload();
    return this.lookups.has(lookup);
  }

  /** A client changed (a key made, rotated or revoked): the list is loaded afresh when next needed. */
  forget(): void {
    this.changes++;
    this.lookups = new Set();
    this.loadedAt = Number.NEGATIVE_INFINITY;
  }

  private age(): number {
    return Date.now() - this.loadedAt;
  }

  /** One load at a time; a failed one keeps the list it had and waits MIN_RELOAD_MS like any other. */
  private reload(): Promise<void> {
    const changesBefore = this.changes;
    this.loading ??= this.load()
      .then(
        (lookups) => {
          if (this.changes === changesBefore) this.lookups = new Set(lookups);
        },
        (err: unknown) => this.onLoadError(err),
      )
      .finally(() => {
        if (this.changes === changesBefore) this.loadedAt = Date.now();
        this.loading = null;
      });
    return this.loading;
  }
}
