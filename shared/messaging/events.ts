/**
 * The event contract: every event a service raises, declared once. Producers, consumers, the
 * webhook catalogues (`GET /api/v1/webhooks/available`, `GET /api/v1/webhooks/event_types`), the
 * OpenAPI `webhooks` section, the client grants and the CLI all read names, subjects, meanings,
 * body schemas and versions from here, so an event is added, renamed or described in this file
 * and nowhere else (docs/webhooks.md, "Events").
 *
 * Two kinds:
 * - Domain events: a state change a subscriber may be told about. Written to the producer's
 *   outbox in the transaction of the change (shared/messaging/outbox.ts), relayed durably on their channel
 *   (shared/messaging/channels.ts, shared/messaging/outbox-relay.mixin.ts) and turned into webhook deliveries.
 * - Internal broadcasts: fire-and-forget Moleculer events between replicas that only tell
 *   listeners to drop a cache or add to a count. Losing one costs freshness, never data, so they
 *   bypass the outbox and are not webhook events.
 */

/** Who may raise an event: a service, or the gateway. */
export type Producer = "clients" | "crm" | "catalogue" | "references" | "orders" | "webhooks" | "gateway";

export interface DomainEventDeclaration {
  /** The channel (JetStream stream subject) it travels on: `<entity>.<past tense>`. */
  channel: string;
  /** The service whose outbox holds it (the only one that may append it). */
  producer: Producer;
  /** What it is about: the outbox row's `entity`, the envelope's `entity`. */
  entity: string;
  /** The OpenAPI component schema of `data`: the entity as the API's GET returns it. */
  body: string;
  /** A few words, for the OpenAPI operation's summary. */
  summary: string;
  /** One line for subscribers: the catalogue's description and the OpenAPI description. */
  meaning: string;
  /**
   * The version of the body's shape (`GET /api/v1/webhooks/event_types`): raised when a change
   * could break a receiver (a field removed, renamed or retyped), not when one is added.
   */
  version: number;
}

/**
 * Keyed by the name subscribers see (`X-WEBHOOK-EVENT`, `PUT /webhooks` `event`). The order of
 * the keys is the catalogue's order.
 */
export const DOMAIN_EVENTS = {
  sales_order_created: {
    channel: "order.created",
    producer: "orders",
    entity: "order",
    body: "Order",
    summary: "An order was created.",
    meaning: "A sales order was created; the body is the order as GET /api/v1/orders/{id} returns it.",
    version: 1,
  },
  sales_order_validated: {
    channel: "order.validated",
    producer: "orders",
    entity: "order",
    body: "Order",
    summary: "An order was validated.",
    meaning:
      "A sales order was validated; the body is the order (with its `code`) as GET /api/v1/orders/{id} returns it.",
    version: 1,
  },
  sales_order_cancelled: {
    channel: "order.cancelled",
    producer: "orders",
    entity: "order",
    body: "Order",
    summary: "An order was cancelled.",
    meaning: "A sales order was cancelled; the body is the order as GET /api/v1/orders/{id} returns it.",
    version: 1,
  },
  order_import_completed: {
    channel: "order_import.completed",
    producer: "orders",
    entity: "order_import",
    body: "OrderImport",
    summary: "One of your order imports ended.",
    meaning:
      "A background import of yours (POST /api/v1/order_imports) ended, `completed` or `failed`; the body is the import with its counts as GET /api/v1/order_imports/{id} returns it (GET …/results has each line's result).",
    version: 1,
  },
  contact_reference_created: {
    channel: "contact_reference.created",
    producer: "references",
    entity: "contact_reference",
    body: "ContactReference",
    summary: "A partner registered a new contact reference.",
    meaning:
      "A partner's contact reference was created; the body is the reference as GET /api/v1/contact_references/{id} returns it.",
    version: 1,
  },
  webhook_endpoint_disabled: {
    channel: "webhook_endpoint.disabled",
    producer: "webhooks",
    entity: "webhook_endpoint",
    body: "Subscription",
    summary: "One of your webhook subscriptions was disabled.",
    meaning:
      "One of your webhook subscriptions was disabled (its endpoint answered 410 Gone, every attempt failed for WEBHOOK_DISABLE_AFTER, or you disabled it with POST /api/v1/webhooks/{id}/disable); sent to your other active subscriptions to this event; the body is the subscription as GET /api/v1/webhooks/{id} returns it.",
    version: 1,
  },
  // About the subscription, not the delivery: a delivery's id (bigint) does not fit an event's entity id.
  webhook_delivery_exhausted: {
    channel: "webhook_endpoint.exhausted",
    producer: "webhooks",
    entity: "webhook_endpoint",
    body: "WebhookDeliveryExhausted",
    summary: "A delivery to one of your webhook subscriptions gave up.",
    meaning:
      "A delivery to one of your webhook subscriptions failed every attempt of its retry schedule and is now `failed` (redeliver or recover it once the endpoint is fixed); sent to your active subscriptions to this event; the body names the subscription, the delivery and its last attempt.",
    version: 1,
  },
  webhook_endpoint_recovered: {
    channel: "webhook_endpoint.recovered",
    producer: "webhooks",
    entity: "webhook_endpoint",
    body: "WebhookEndpointRecovered",
    summary: "A failing webhook subscription of yours succeeded again.",
    meaning:
      "One of your webhook subscriptions whose attempts had been failing for at least one retry interval succeeded again; sent to your active subscriptions to this event; the body names the subscription and since when it had been failing.",
    version: 1,
  },
} as const satisfies Record<string, DomainEventDeclaration>;

export type EventName = keyof typeof DOMAIN_EVENTS;

/** Every domain event name, in the catalogue's order. */
export const EVENTS = Object.keys(DOMAIN_EVENTS) as readonly EventName[];

export function channelOf(event: EventName): string {
  return DOMAIN_EVENTS[event].channel;
}

/** The events about one entity (e.g. every order event). */
export function eventsAbout(entity: string): EventName[] {
  return EVENTS.filter((e) => DOMAIN_EVENTS[e].entity === entity);
}

/**
 * Events the webhooks service raises itself about one subscription, for that subscription
 * only: nobody subscribes to them, they travel on no channel, and they are delivered, signed,
 * logged and retried like any other (docs/webhooks.md).
 */
export const SUBSCRIPTION_EVENTS = {
  webhook_test: {
    body: "WebhookTestEvent",
    summary: "A test event, sent on request.",
    meaning:
      "Sent by POST /api/v1/webhooks/{id}/test to that subscription only; the body names the subscription and when the test was asked for.",
    version: 1,
  },
} as const satisfies Record<string, Pick<DomainEventDeclaration, "body" | "summary" | "meaning" | "version">>;

export type SubscriptionEventName = keyof typeof SUBSCRIPTION_EVENTS;

/** Any event a delivery can carry: a domain event, or one about the subscription itself. */
export type DeliveredEventName = EventName | SubscriptionEventName;

export const SUBSCRIPTION_EVENT_NAMES = Object.keys(SUBSCRIPTION_EVENTS) as readonly SubscriptionEventName[];

/** The event of POST /api/v1/webhooks/{id}/test. */
export const TEST_EVENT: SubscriptionEventName = "webhook_test";

export function isSubscriptionEvent(event: string): event is SubscriptionEventName {
  return Object.hasOwn(SUBSCRIPTION_EVENTS, event);
}

/**
 * What travels on a channel and what the outbox row becomes: the envelope of every domain
 * event. `data` is the entity's representation at the time of the event (the webhook body),
 * described by the declaration's `body` schema; its TypeScript type belongs to the producer.
 */
export interface DomainEvent<T = unknown> {
  /** Globally unique: `<schema>-<outbox id>`; the webhook-id and JetStream's msgID derive from it. */
  id: string;
  event: EventName;
  /** The client that owns the entity (partners are told only of their own). */
  ownerClientId: number;
  entity: string;
  entityId: number;
  occurredAt: string;
  data: T;
  /** The request that raised it, so the webhook attempt log can name it (shared/observability/request-context.ts). */
  requestId?: string;
  /** W3C traceparent of the span that sent it, so the consumer continues the trace (shared/observability/tracing.ts). */
  traceparent?: string;
}

export interface BroadcastDeclaration {
  /** The Moleculer event name: `<producer>.<what happened>`. */
  name: string;
  producer: Producer;
  /** Who listens, and what they do with it. */
  listeners: readonly Producer[];
  meaning: string;
}

/**
 * Internal broadcasts. A cache filled from another service's data lists the broadcast that
 * empties it here; data that never changes after creation (catalogue packagings, products)
 * needs none.
 */
export const BROADCASTS = {
  clientsChanged: {
    name: "clients.changed",
    producer: "clients",
    listeners: ["gateway", "webhooks"],
    meaning:
      "A client was created, patched, revoked or had a key rotated: drop its cached principals and the list of active keys, and re-check its queued deliveries.",
  },
  contactsChanged: {
    name: "crm.contactsChanged",
    producer: "crm",
    listeners: ["references", "orders"],
    meaning:
      "CRM contacts changed: drop the cached copies of these contacts (and, in orders, the contact references resolved to them).",
  },
  contactReferencesChanged: {
    name: "references.contactReferencesChanged",
    producer: "references",
    listeners: ["orders"],
    meaning: "Contact references now point at another contact: drop what was resolved from them.",
  },
  subscriptionsChanged: {
    name: "webhooks.subscriptionsChanged",
    producer: "webhooks",
    listeners: ["webhooks", "orders", "references"],
    meaning:
      "A webhook subscription was created, enabled, moved to another URL, disabled by its owner or deleted: drop the lists of who listens to each event (services/webhooks/webhooks.listeners.ts, and each outbox relay's shared/messaging/listened-events.ts).",
  },
  usageCounted: {
    name: "gateway.usageCounted",
    producer: "gateway",
    listeners: ["gateway"],
    meaning: "Rate-limit points one gateway counted, for the other gateways to count too (gateway/usage-sharing.ts).",
  },
} as const satisfies Record<string, BroadcastDeclaration>;

/** `clients.changed`: the client that changed; a payload without one means "every client". */
export interface ClientsChangedPayload {
  clientId: number;
}

/** `crm.contactsChanged`: the ids of the contacts that changed. */
export interface ContactsChangedPayload {
  ids: number[];
}

/** `references.contactReferencesChanged`: the ids of the contact references that changed. */
export interface ContactReferencesChangedPayload {
  ids: number[];
}

/** `gateway.usageCounted`: `[limiter, key, points]` triples. */
export interface UsageReport {
  usage: [limiter: string, key: string, points: number][];
}
