/**
 * How many attempts this dispatcher may have in flight to each origin (scheme, host and port of a
 * subscription URL; a delivery's `endpoint`, as WEBHOOK_ENDPOINT_CONCURRENCY and endpoint_pauses
 * call it). Without a cap, one server that accepts connections and never answers would soon hold
 * every dispatcher slot, and every other subscriber would wait behind its time-outs.
 *
 * - Each origin gets at most `capacity` attempts at once.
 * - An origin whose attempt timed out is "on probation": it gets one slot (a probe) until one
 *   of its attempts gets an answer, any HTTP status. A hanging server so costs one slot, not
 *   `capacity`; its deliveries stay due and are tried one by one, in retry-schedule order.
 *
 * The state is this process's own: with N webhooks replicas an origin gets up to N times as
 * many. After a restart an origin starts trusted again and is put on probation by its next
 * time-out.
 */
import type { AttemptOutcome } from "./webhooks.sender";

/** What the claim statement must respect: origins with fewer free slots than `capacity`. */
export interface OriginLimit {
  /** The origin, as the claim statement names it. */
  endpoint: string;
  free: number;
}

interface OriginState {
  inFlight: number;
  /** When its last attempt timed out, while no attempt has been answered since; else null. */
  probationSince: number | null;
}

/**
 * An origin left on probation with nothing in flight is forgotten after this long: deliveries
 * are retried for about a day, so by then it has nothing left to send, and the map stays small.
 */
const FORGET_PROBATION_AFTER_MS = 24 * 3_600_000;

export class OriginSlots {
  private readonly origins = new Map<string, OriginState>();

  constructor(
    private readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Slots the origin has left now. */
  free(origin: string): number {
    const state = this.origins.get(origin);
    if (!state) return this.capacity;
    const allowed = state.probationSince === null ? this.capacity : 1;
    return Math.max(0, allowed - state.inFlight);
  }

  /** Every origin that has fewer free slots than a fresh one. */
  limits(): OriginLimit[] {
    this.forgetStale();
    const limits: OriginLimit[] = [];
    for (const origin of this.origins.keys()) {
      const free = this.free(origin);
      if (free < this.capacity) limits.push({ endpoint: origin, free });
    }
    return limits;
  }

  take(origin: string): void {
    const state = this.origins.get(origin) ?? { inFlight: 0, probationSince: null };
    state.inFlight += 1;
    this.origins.set(origin, state);
  }

  /** A slot taken for an attempt that was not made after all (a fan-out's reservation left unused). */
  giveBack(origin: string): void {
    const state = this.origins.get(origin);
    if (!state) return;
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (state.inFlight === 0 && state.probationSince === null) this.origins.delete(origin);
  }

  /** The attempt ended: frees its slot and learns from how it ended. */
  release(origin: string, outcome: AttemptOutcome["kind"]): void {
    const state = this.origins.get(origin);
    if (!state) return;
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (outcome === "timeout") state.probationSince = this.now();
    // Any answer, even an error status, shows the server no longer hangs. A refused connection
    // or a DNS failure ends at once and holds no slot for long: it changes nothing here.
    else if (outcome === "delivered" || outcome === "rejected") state.probationSince = null;
    if (state.inFlight === 0 && state.probationSince === null) this.origins.delete(origin);
  }

  /** At least half of what the origin is allowed is free: worth claiming for it again. */
  halfFree(origin: string): boolean {
    const allowed = this.onProbation(origin) ? 1 : this.capacity;
    return this.free(origin) * 2 >= allowed;
  }

  onProbation(origin: string): boolean {
    return (this.origins.get(origin)?.probationSince ?? null) !== null;
  }

  private forgetStale(): void {
    const cutoff = this.now() - FORGET_PROBATION_AFTER_MS;
    for (const [origin, state] of this.origins) {
      if (state.inFlight === 0 && state.probationSince !== null && state.probationSince < cutoff)
        this.origins.delete(origin);
    }
  }
}
