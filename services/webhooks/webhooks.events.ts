/**
 * The events a client can subscribe to, and who receives which (docs/webhooks.md):
 * a subscription receives the events about entities its client owns; a client holding
 * `orders:manage` (the instance's back office) receives the order events of every client.
 */
import { hasScope, type Principal } from "../../shared/auth";
import { EVENTS, type EventName } from "../../shared/outbox";

export const EVENT_DESCRIPTIONS: Record<EventName, string> = {
  sales_order_created: "A sales order was created; the body is the order as GET /api/v1/orders/{id} returns it.",
  sales_order_validated: "A sales order was validated; the body is the order (with its `code`) as GET /api/v1/orders/{id} returns it.",
  sales_order_cancelled: "A sales order was cancelled; the body is the order as GET /api/v1/orders/{id} returns it.",
  contact_reference_created: "A partner's contact reference was created; the body is the reference as GET /api/v1/contact_references/{id} returns it.",
};

const ORDER_EVENTS: ReadonlySet<EventName> = new Set(["sales_order_created", "sales_order_validated", "sales_order_cancelled"]);

/** The events this client may subscribe to, in the catalogue's order. */
export function availableEvents(client: Principal): EventName[] {
  return EVENTS.filter((e) => client.webhookEvents.includes(e));
}

/** Whether a subscription of this client to this event receives every client's events. */
export function seesAllClients(client: Principal, event: EventName): boolean {
  return ORDER_EVENTS.has(event) && hasScope(client, "orders:manage");
}
