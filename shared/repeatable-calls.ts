/**
 * Which action calls may be sent a second time when the first one may or may not have run (its
 * node died, or it timed out): those whose repeat changes nothing. Reads, and an order whose
 * Idempotency-Key replays the first answer or whose externalId (claimed before any write,
 * unique per client) makes a second one a 409 naming the first. Every other write is never
 * repeated by the broker: the caller gets the error and decides.
 */
import type { Context } from "moleculer";

/** Actions that only read. A new read action is not retried until it is named here. */
const READ_ACTIONS = new Set([
  "clients.authenticate", "clients.principals", "clients.list", "clients.get",
  "crm.listContacts", "crm.getContact", "crm.listCustomers", "crm.getCustomer", "crm.contactsByIds",
  "catalogue.listPackagings", "catalogue.getPackaging", "catalogue.listProducts", "catalogue.getProduct", "catalogue.packagingsByIds",
  "references.listContactReferences", "references.getContactReference", "references.listPackagingReferences",
  "references.getPackagingReference", "references.resolveContact", "references.resolvePackagings",
  "orders.get", "orders.list",
  "webhooks.available", "webhooks.list", "webhooks.get", "webhooks.deliveries",
]);

interface OrderCall {
  params?: { externalId?: unknown };
  meta?: { idempotencyKey?: unknown };
}

export function isRepeatableCall(ctx: Context): boolean {
  const name = ctx.action?.name ?? "";
  if (READ_ACTIONS.has(name)) return true;
  if (name === "orders.create") {
    const call = ctx as unknown as OrderCall;
    return Boolean(call.meta?.idempotencyKey) || typeof call.params?.externalId === "string";
  }
  return false;
}
