/**
 * JSON Schemas (2020-12) of the webhooks representations (webhooks.representation.ts), for the
 * OpenAPI document.
 */
import { EVENTS } from "../../shared/events";
import { DELIVERY_STATUSES } from "./webhooks.params";

const timestamp = { type: "string", format: "date-time" } as const;
const nullableTimestamp = { type: ["string", "null"], format: "date-time" } as const;
const event = { enum: [...EVENTS] } as const;

export const WebhookEvent = {
  type: "object",
  description: "An event this client may subscribe to.",
  required: ["event", "description"],
  properties: { event, description: { type: "string" } },
  additionalProperties: false,
} as const;

const subscriptionProperties = {
  id: { type: "integer" },
  event,
  url: { type: "string", description: "Receives a `POST` for each event (`https://`)." },
  createdAt: timestamp,
  rotatedAt: { ...nullableTimestamp, description: "When the key and secret were last rotated." },
} as const;
const subscriptionRequired = ["id", "event", "url", "createdAt", "rotatedAt"] as const;

export const Subscription = {
  type: "object",
  description: "A subscription of this client to one event, delivered to one URL.",
  required: [...subscriptionRequired],
  properties: subscriptionProperties,
  additionalProperties: false,
} as const;

export const SubscriptionWithSecrets = {
  type: "object",
  description: "A subscription with its `key` and signing `secret`: shown only when subscribing and on rotation.",
  required: [...subscriptionRequired, "key", "secret"],
  properties: {
    ...subscriptionProperties,
    key: { type: "string", description: "Sent as `X-WEBHOOK-KEY` with every request." },
    secret: { type: "string", description: "Signs every request (Standard Webhooks `webhook-signature`, `whsec_` form)." },
  },
  additionalProperties: false,
} as const;

export const Delivery = {
  type: "object",
  description: "One event to deliver to one subscription, and each attempt made.",
  required: ["id", "webhookId", "eventId", "event", "status", "nextAttemptAt", "createdAt", "payload", "attempts"],
  properties: {
    id: { type: "integer" },
    webhookId: { type: "string", description: "The `webhook-id` header of every attempt: deduplicate on it." },
    eventId: { type: "string" },
    event,
    status: { enum: [...DELIVERY_STATUSES] },
    nextAttemptAt: { ...nullableTimestamp, description: "When it is tried next; null once it succeeded, failed or was refused." },
    createdAt: timestamp,
    payload: { description: "The request body, as sent." },
    attempts: {
      type: "array",
      items: {
        type: "object",
        required: ["attemptedAt", "statusCode", "error", "durationMs"],
        properties: {
          attemptedAt: timestamp,
          statusCode: { type: ["integer", "null"], description: "The receiver's HTTP status; null when it gave none (see `error`)." },
          error: { type: ["string", "null"] },
          durationMs: { type: "number", minimum: 0 },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;
