/**
 * The event catalogue (docs/webhooks.md, "Event catalogue"): for each event the caller may
 * subscribe to, its meaning, the JSON Schema of its body — the very schema of the API
 * reference's `webhooks` section, handed over by the composition root — an example body that
 * validates against it, and the version of that shape, all from the event contract.
 */
import { DOMAIN_EVENTS, type EventName } from "../../shared/messaging/events";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { availableEvents } from "./webhooks.audience";
import { availableParams } from "./webhooks.params";
import { listenedEventNames } from "./webhooks.subscriptions.repository";
import type { WebhooksActions, WebhooksSettings } from "./webhooks.service-context";

/** One entry of the catalogue. */
export interface EventType {
  event: EventName;
  description: string;
  /** JSON Schema (2020-12) of the body, self-contained. */
  schema: Record<string, unknown>;
  /** A body that validates against `schema`: the schema's own first example. */
  example: unknown;
  version: number;
}

export function eventType(event: EventName, bodies: WebhooksSettings["eventBodies"]): EventType {
  const schema = bodies[event];
  const [example] = (schema.examples ?? []) as unknown[];
  return { event, description: DOMAIN_EVENTS[event].meaning, schema, example, version: DOMAIN_EVENTS[event].version };
}

export const eventTypeActions: WebhooksActions = {
  eventTypes: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "The events this client may subscribe to, each with its meaning, the JSON Schema of its body, an example body and its version.",
    params: availableParams,
    handler(ctx: RequestContext): EventType[] {
      const bodies = (this.settings as WebhooksSettings).eventBodies;
      return availableEvents(callerOf(ctx)).map((event) => eventType(event, bodies));
    },
  },

  /**
   * The event names some active subscription listens to: the outbox relays settle the others
   * without publishing them (shared/messaging/listened-events.ts), each asking about once a
   * second while events flow.
   */
  listenedEvents: {
    visibility: "public",
    handler(): Promise<EventName[]> {
      return listenedEventNames(this.db);
    },
  },
};
