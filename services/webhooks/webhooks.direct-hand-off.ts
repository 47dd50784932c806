/**
 * How a fresh event's deliveries reach this process's dispatcher without a claim statement, one
 * way: the fan-out (webhooks.fanout.ts) asks for slots (`reserve`), stores the deliveries of the
 * reserved subscriptions already claimed (webhooks.deliveries.repository.ts
 * `insertEventDeliveries`), hands them over (`settle`), and names the endpoints of those it
 * stored due instead (`queued`). The dispatcher (webhooks.dispatcher.ts) implements it and never
 * calls the fan-out; the worker (webhooks.worker.ts) gives the fan-out its dispatcher as this.
 */
import type { ClaimedDelivery } from "./webhooks.deliveries.repository";
import type { Ordering } from "./webhooks.params";

/** A subscription a fresh event is for, and its endpoint (its URL's origin). */
export interface HandOffTarget {
  id: number;
  endpoint: string;
  /** A `per_entity` delivery is stored before it is sent (its line decides when): no fan-out waits for room for it. */
  ordering?: Ordering;
}

/**
 * Slots held for the deliveries a fan-out is about to store claimed, or (`sendFirst`) to send
 * before storing them (webhooks.send-first.ts); `settle` sends those that were returned so, and
 * gives the other slots back. Settle it exactly once, with [] when the insert failed; it
 * resolves once every delivery it sends has its row (rejects when one could not be written):
 * only then may the fan-out's event be acknowledged.
 */
export interface Reservation {
  subscriptionIds: number[];
  sendFirst: boolean;
  settle(claimed: readonly ClaimedDelivery[]): Promise<void>;
}

export interface DirectHandOff {
  /** How long a delivery stored claimed is held (the dispatcher's lease). */
  readonly leaseMs: number;
  /** A slot for each of these subscriptions the dispatcher can send to at once; maybe none, maybe after a wait for room. */
  reserve(targets: readonly HandOffTarget[]): Promise<Reservation>;
  /** Deliveries to these endpoints were stored due, for any dispatcher's claim. */
  queued(endpoints: readonly string[]): void;
}
