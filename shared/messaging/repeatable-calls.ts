/**
 * Which action calls may be sent a second time when the first one may or may not have run (its
 * node died, or it timed out): those whose repeat changes nothing. Reads, and an order whose
 * Idempotency-Key replays the first answer or whose externalId (claimed before any write,
 * unique per client) makes a second one a 409 naming the first. Every other write is never
 * repeated by the broker: the caller gets the error and decides.
 *
 * And how long one attempt of such a call is given before it is sent again. A replica killed
 * with SIGKILL never answers what it held, and with NATS queue groups its caller does not even
 * know which node that was (moleculer rejects the pending requests of a node that left only by
 * node, and a balanced request has none), so only a time-out ends the wait: a short one per
 * attempt, the whole request time-out for the call (shared/messaging/remote-calls.ts).
 */
import type { Context } from "moleculer";
import { FEED_ACTION, FEED_PRODUCERS } from "./outbox-feed";

/** Actions that only read. A new read action is not retried until it is named here. */
const READ_ACTIONS = new Set([
  "clients.authenticate",
  "clients.principals",
  "clients.list",
  "clients.get",
  "crm.listContacts",
  "crm.getContact",
  "crm.listCustomers",
  "crm.getCustomer",
  "crm.contactsByIds",
  "catalogue.listPackagings",
  "catalogue.getPackaging",
  "catalogue.listProducts",
  "catalogue.getProduct",
  "catalogue.packagingsByIds",
  "references.listContactReferences",
  "references.getContactReference",
  "references.listPackagingReferences",
  "references.getPackagingReference",
  "references.resolveContact",
  "references.resolvePackagings",
  "references.resolveOrders",
  "orders.get",
  "orders.list",
  "webhooks.available",
  "webhooks.list",
  "webhooks.get",
  "webhooks.deliveries",
  "webhooks.searchDeliveries",
  "webhooks.feed",
  // The events feed's read of each producer's outbox (shared/messaging/outbox-feed.ts).
  ...FEED_PRODUCERS.map((p) => `${p}.${FEED_ACTION}`),
]);

/**
 * Reads answer in milliseconds (a few tens under load): one that has not answered in 1 s is
 * on a node that died or froze. An order takes a few resolutions and a transaction; 2 s leaves
 * it room before a repeat that could only replay it or be refused as its duplicate.
 */
export const READ_ATTEMPT_TIMEOUT_MS = 1_000;
export const ORDER_ATTEMPT_TIMEOUT_MS = 2_000;
export const UNKEYED_ORDER_ATTEMPT_TIMEOUT_MS = 5_000;

interface OrderCall {
  params?: { externalId?: unknown };
  meta?: { idempotencyKey?: unknown };
}

/**
 * How long one attempt of this call may take before it is sent again; null: never sent again.
 *
 * An order with only an externalId gets a longer attempt: a repeat of an order that is merely
 * slow, still being written by a live replica, is refused as its own duplicate (409), which the
 * failover drills saw at 2 s on an overloaded machine; waiting the whole time-out instead left a
 * killed replica's order no time for its repeat (a 503 after 10 s). Half the default time-out
 * keeps room for both. With an Idempotency-Key the repeat replays the first answer: 2 s is harmless.
 */
export function attemptTimeoutMs(ctx: Context): number | null {
  const name = ctx.action?.name ?? "";
  if (READ_ACTIONS.has(name)) return READ_ATTEMPT_TIMEOUT_MS;
  if (name === "orders.create") {
    const call = ctx as unknown as OrderCall;
    if (call.meta?.idempotencyKey) return ORDER_ATTEMPT_TIMEOUT_MS;
    return typeof call.params?.externalId === "string" ? UNKEYED_ORDER_ATTEMPT_TIMEOUT_MS : null;
  }
  return null;
}

export function isRepeatableCall(ctx: Context): boolean {
  return attemptTimeoutMs(ctx) !== null;
}
