/**
 * JSON Schemas (2020-12) of the webhook bodies this service raises itself (webhook_test and the
 * operational events: webhooks.test-event.ts, webhooks.operational-events.ts) and of the event
 * catalogue (webhooks.event-type-actions.ts), for the OpenAPI document. Each body carries its
 * example, which the catalogue shows and a unit test validates.
 */
import { EVENTS, SUBSCRIPTION_EVENT_NAMES } from "../../shared/messaging/events";

const timestamp = { type: "string", format: "date-time" } as const;

const subscriptionSummary = {
  type: "object",
  description: "The subscription concerned: GET /api/v1/webhooks/{id} shows it whole.",
  required: ["id", "event", "url"],
  properties: { id: { type: "integer" }, event: { enum: [...EVENTS] }, url: { type: "string" } },
  additionalProperties: false,
} as const;

const exampleSubscription = { id: 12, event: "sales_order_validated", url: "https://erp.example.com/hooks/orders" };

export const WebhookTestEvent = {
  type: "object",
  description: "The body of `webhook_test` (POST /webhooks/{id}/test): sent to that subscription only.",
  required: ["test", "subscriptionId", "event", "url", "requestedAt"],
  properties: {
    test: { const: true },
    subscriptionId: { type: "integer" },
    event: { enum: [...EVENTS], description: "The event the subscription receives otherwise." },
    url: { type: "string" },
    requestedAt: timestamp,
  },
  additionalProperties: false,
  examples: [
    {
      test: true,
      subscriptionId: 12,
      event: "sales_order_validated",
      url: "https://erp.example.com/hooks/orders",
      requestedAt: "2026-11-21T10:00:00.000Z",
    },
  ],
} as const;

export const WebhookDeliveryExhausted = {
  type: "object",
  description:
    "The body of `webhook_delivery_exhausted`: a delivery failed every attempt of its retry schedule and is now `failed`.",
  required: ["subscription", "delivery", "lastAttempt"],
  properties: {
    subscription: subscriptionSummary,
    delivery: {
      type: "object",
      description: "The delivery that gave up: GET /api/v1/webhooks/{id}/deliveries lists it with every attempt.",
      required: ["id", "webhookId", "eventId", "event", "createdAt", "attempts"],
      properties: {
        id: { type: "integer" },
        webhookId: { type: "string", description: "Its `webhook-id` header." },
        eventId: { type: "string" },
        event: { enum: [...EVENTS, ...SUBSCRIPTION_EVENT_NAMES] },
        createdAt: timestamp,
        attempts: {
          type: "integer",
          minimum: 1,
          description: "Attempts made since it was created or last sent again.",
        },
      },
      additionalProperties: false,
    },
    lastAttempt: {
      type: "object",
      required: ["attemptedAt", "statusCode", "error"],
      properties: {
        attemptedAt: timestamp,
        statusCode: {
          type: ["integer", "null"],
          description: "What the endpoint answered; null when it gave no answer (see `error`).",
        },
        error: { type: ["string", "null"] },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
  examples: [
    {
      subscription: exampleSubscription,
      delivery: {
        id: 9041,
        webhookId: "msg_4f1c0b7a9d2e4c44b1d3a8e2f6c9b0d1",
        eventId: "orders-41",
        event: "sales_order_validated",
        createdAt: "2026-11-21T10:05:00.000Z",
        attempts: 11,
      },
      lastAttempt: { attemptedAt: "2026-11-22T10:31:12.000Z", statusCode: 503, error: null },
    },
  ],
} as const;

export const WebhookEndpointRecovered = {
  type: "object",
  description:
    "The body of `webhook_endpoint_recovered`: a subscription whose attempts had been failing for at least one retry interval succeeded again.",
  required: ["subscription", "failingSince", "recoveredAt"],
  properties: {
    subscription: subscriptionSummary,
    failingSince: { ...timestamp, description: "When its unbroken run of failed attempts began." },
    recoveredAt: { ...timestamp, description: "When the attempt that succeeded was made." },
  },
  additionalProperties: false,
  examples: [
    {
      subscription: exampleSubscription,
      failingSince: "2026-11-21T10:05:00.000Z",
      recoveredAt: "2026-11-21T10:47:30.000Z",
    },
  ],
} as const;

export const EventType = {
  type: "object",
  description: "An event this client may subscribe to, with the shape of its body.",
  required: ["event", "description", "schema", "example", "version"],
  properties: {
    event: { enum: [...EVENTS] },
    description: { type: "string" },
    schema: {
      type: "object",
      description:
        "JSON Schema (2020-12) of the request body, self-contained (`$defs`): the schema of this event's request in the `webhooks` section of this document.",
    },
    example: { description: "A body that validates against `schema`." },
    version: {
      type: "integer",
      minimum: 1,
      description:
        "The version of the body's shape: raised when a change could break a receiver, not when a field is added.",
    },
  },
  additionalProperties: false,
} as const;
