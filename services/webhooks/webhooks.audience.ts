/**
 * The events a client can subscribe to, and who receives which (its audience; docs/webhooks.md):
 * a subscription receives the events about entities its client owns; a client holding
 * `orders:manage` (the instance's back office) receives the order events of every client.
 * Decided from the client's grants as they are NOW — at fan-out, when queued deliveries are
 * re-checked after a change, and just before each send — never copied at subscription time.
 */
import { hasScope, type Principal } from "../../shared/security/auth";
import {
  DOMAIN_EVENTS,
  EVENTS,
  eventsAbout,
  isSubscriptionEvent,
  type DeliveredEventName,
  type EventName,
} from "../../shared/messaging/events";
import type { WebhookEvent } from "./webhooks.representation";

/** The catalogue's entry for an event (`GET /webhooks/available`): its meaning from the contract. */
export function describeEvent(event: EventName): WebhookEvent {
  return { event, description: DOMAIN_EVENTS[event].meaning };
}

/** The back office hears these about every client's orders, not only its own. */
const ORDER_EVENTS: ReadonlySet<EventName> = new Set(eventsAbout("order"));

/** The events this client may subscribe to, in the catalogue's order. */
export function availableEvents(client: Principal): EventName[] {
  return EVENTS.filter((e) => client.webhookEvents.includes(e));
}

/** What a client's subscriptions hear: nothing once it is revoked (no principal) or lost `webhooks`. */
export interface Audience {
  /** Events its subscriptions hear about its own entities. */
  events: EventName[];
  /** Of those, the ones they hear about every client's entities. */
  everyClientEvents: EventName[];
}

export function audienceOf(client: Principal | undefined): Audience {
  if (!client || !hasScope(client, "webhooks")) return { events: [], everyClientEvents: [] };
  const events = availableEvents(client);
  return {
    events,
    everyClientEvents: hasScope(client, "orders:manage") ? events.filter((e) => ORDER_EVENTS.has(e)) : [],
  };
}

/** Whether a subscription of `subscriberId` (whose current principal is `client`) hears this event. */
export function hears(
  client: Principal | undefined,
  subscriberId: number,
  event: { event: DeliveredEventName; ownerClientId: number },
): boolean {
  // An event about the subscription itself (a test) needs no grant but `webhooks`.
  if (isSubscriptionEvent(event.event))
    return client !== undefined && hasScope(client, "webhooks") && event.ownerClientId === subscriberId;
  const audience = audienceOf(client);
  if (!audience.events.includes(event.event)) return false;
  return event.ownerClientId === subscriberId || audience.everyClientEvents.includes(event.event);
}
