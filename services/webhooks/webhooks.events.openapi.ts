/**
 * JSON Schemas (2020-12) of the webhook bodies this service raises itself (webhook_test:
 * webhooks.test-event.ts) and of the event catalogue (webhooks.event-type-actions.ts), for the
 * OpenAPI document. Each body carries its example, which the catalogue shows and a unit test
 * validates.
 */
import { EVENTS } from "../../shared/messaging/events";

const timestamp = { type: "string", format: "date-time" } as const;

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
