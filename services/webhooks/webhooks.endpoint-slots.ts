/**
 * How many attempts this dispatcher may have in flight to each endpoint (a subscription URL's
 * origin: scheme, host and port). Without a cap, one endpoint that accepts connections and never
 * answers would soon hold every dispatcher slot, and every other subscriber would wait behind
 * its time-outs.
 *
 * - Each endpoint gets at most `capacity` attempts at once.
 * - An endpoint whose attempt timed out is "on probation": it gets one slot (a probe) until one
 *   of its attempts gets an answer, any HTTP status. A hanging endpoint so costs one slot, not
 *   `capacity`; its deliveries stay due and are tried one by one, in retry-schedule order.
 *
 * The state is this process's own: with N webhooks replicas an endpoint gets up to N times as
 * many. After a restart an endpoint starts trusted again and is put on probation by its next
 * time-out.
 */
import type { AttemptOutcome } from "./webhooks.sender";

/** What the claim statement must respect: endpoints with fewer free slots than `capacity`. */
export interface EndpointLimit {
  endpoint: string;
  free: number;
}

interface EndpointState {
  inFlight: number;
  /** When its last attempt timed out, while no attempt has been answered since; else null. */
  probationSince: number | null;
}

/**
 * An endpoint left on probation with nothing in flight is forgotten after this long: deliveries
 * are retried for about a day, so by then it has nothing left to send, and the map stays small.
 */
const FORGET_PROBATION_AFTER_MS = 24 * 3_600_000;

export class EndpointSlots {
  private readonly endpoints = new Map<string, EndpointState>();

  constructor(
    private readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Slots the endpoint has left now. */
  free(endpoint: string): number {
    const state = this.endpoints.get(endpoint);
    if (!state) return this.capacity;
    const allowed = state.probationSince === null ? this.capacity : 1;
    return Math.max(0, allowed - state.inFlight);
  }

  /** Every endpoint that has fewer free slots than a fresh one. */
  limits(): EndpointLimit[] {
    this.forgetStale();
    const limits: EndpointLimit[] = [];
    for (const endpoint of this.endpoints.keys()) {
      const free = this.free(endpoint);
      if (free < this.capacity) limits.push({ endpoint, free });
    }
    return limits;
  }

  take(endpoint: string): void {
    const state = this.endpoints.get(endpoint) ?? { inFlight: 0, probationSince: null };
    state.inFlight += 1;
    this.endpoints.set(endpoint, state);
  }

  /** A slot taken for an attempt that was not made after all (a fan-out's reservation left unused). */
  giveBack(endpoint: string): void {
    const state = this.endpoints.get(endpoint);
    if (!state) return;
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (state.inFlight === 0 && state.probationSince === null) this.endpoints.delete(endpoint);
  }

  /** The attempt ended: frees its slot and learns from how it ended. */
  release(endpoint: string, outcome: AttemptOutcome["kind"]): void {
    const state = this.endpoints.get(endpoint);
    if (!state) return;
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (outcome === "timeout") state.probationSince = this.now();
    // Any answer, even an error status, shows the endpoint no longer hangs. A refused connection
    // or a DNS failure ends at once and holds no slot for long: it changes nothing here.
    else if (outcome === "delivered" || outcome === "rejected") state.probationSince = null;
    if (state.inFlight === 0 && state.probationSince === null) this.endpoints.delete(endpoint);
  }

  /** At least half of what the endpoint is allowed is free: worth claiming for it again. */
  halfFree(endpoint: string): boolean {
    const allowed = this.onProbation(endpoint) ? 1 : this.capacity;
    return this.free(endpoint) * 2 >= allowed;
  }

  onProbation(endpoint: string): boolean {
    return (this.endpoints.get(endpoint)?.probationSince ?? null) !== null;
  }

  private forgetStale(): void {
    const cutoff = this.now() - FORGET_PROBATION_AFTER_MS;
    for (const [endpoint, state] of this.endpoints) {
      if (state.inFlight === 0 && state.probationSince !== null && state.probationSince < cutoff)
        this.endpoints.delete(endpoint);
    }
  }
}
