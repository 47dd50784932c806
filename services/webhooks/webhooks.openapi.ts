/**
 * JSON Schemas (2020-12) of the webhooks representations (webhooks.representation.ts), for the
 * OpenAPI document.
 */
import { EVENTS, SUBSCRIPTION_EVENT_NAMES } from "../../shared/messaging/events";
import { ATTEMPT_TRIGGERS } from "./webhooks.deliveries.repository";
import { DELIVERY_STATUSES, ORDERINGS } from "./webhooks.params";
import {
  REDACTED,
  RESPONSE_BODY_MAX_BYTES,
  RESPONSE_HEADERS_MAX,
  RESPONSE_HEADERS_MAX_BYTES,
} from "./webhooks.response-capture";
import { SIGNATURE_SCHEMES } from "./webhooks.signing";

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
  status: {
    enum: ["active", "disabled"],
    description:
      "`disabled` (after a `410 Gone`, or failing every attempt for WEBHOOK_DISABLE_AFTER): nothing is sent until `POST /webhooks/{id}/enable`.",
  },
  disabledAt: { ...nullableTimestamp, description: "When it was disabled; null while active." },
  disabledReason: { type: ["string", "null"], description: "Why it was disabled; null while active." },
  event,
  url: { type: "string", description: "Receives a `POST` for each event (`https://`)." },
  createdAt: timestamp,
  rotatedAt: { ...nullableTimestamp, description: "When the key and secret were last rotated." },
  signature: {
    enum: [...SIGNATURE_SCHEMES],
    description: "`ed25519`: every request also carries a `v1a` signature, verified with `publicKey`.",
  },
  publicKey: {
    type: ["string", "null"],
    pattern: "^whpk_",
    description: "`whpk_` + base64 of the Ed25519 public key that verifies the `v1a` signatures; null for `hmac`.",
  },
  previousSecretUntil: {
    ...nullableTimestamp,
    description:
      "Until when the key and secret replaced by the last rotation still sign beside the current ones (`X-WEBHOOK-PREVIOUS-KEY`, a second signature); null once they no longer do.",
  },
  description: { type: ["string", "null"], description: "What the subscription is for, as its owner wrote it." },
  headerNames: {
    type: "array",
    items: { type: "string" },
    maxItems: 10,
    description:
      "The custom headers sent with every delivery (`PATCH /webhooks/{id}`), by name: their values are stored encrypted and never shown again.",
  },
  rateLimit: {
    type: ["integer", "null"],
    minimum: 1,
    maximum: 1000,
    description: "Deliveries per second its endpoint accepts, across every webhooks process; null for no limit.",
  },
  ordering: {
    enum: [...ORDERINGS],
    description:
      '`per_entity`: the deliveries about one entity (an order) to this client\'s `per_entity` subscriptions on this URL are sent one at a time, in the order the changes were made; `none` (the default): no order. See docs/webhooks.md, "Order".',
  },
} as const;
const subscriptionRequired = [
  "id",
  "status",
  "disabledAt",
  "disabledReason",
  "event",
  "url",
  "createdAt",
  "rotatedAt",
  "signature",
  "publicKey",
  "previousSecretUntil",
  "description",
  "headerNames",
  "rateLimit",
  "ordering",
] as const;

/** A subscription its endpoint disabled, as `webhook_endpoint_disabled` carries it (the event catalogue's example). */
const disabledSubscriptionExample = {
  id: 12,
  status: "disabled",
  disabledAt: "2026-11-22T03:14:00.000Z",
  disabledReason: "The endpoint answered 410 Gone.",
  event: "sales_order_validated",
  url: "https://erp.example.com/hooks/orders",
  createdAt: "2026-11-21T10:00:00.000Z",
  rotatedAt: null,
  signature: "hmac",
  publicKey: null,
  previousSecretUntil: null,
  description: "ERP order import",
  headerNames: ["Authorization"],
  rateLimit: 50,
  ordering: "per_entity",
} as const;

export const Subscription = {
  type: "object",
  description: "A subscription of this client to one event, delivered to one URL.",
  examples: [disabledSubscriptionExample],
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
    secret: {
      type: "string",
      description: "Signs every request (Standard Webhooks `webhook-signature`, `whsec_` form).",
    },
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
    event: {
      enum: [...EVENTS, ...SUBSCRIPTION_EVENT_NAMES],
      description: "The event; `webhook_test` for a test asked with `POST /webhooks/{id}/test`.",
    },
    status: {
      enum: [...DELIVERY_STATUSES],
      description:
        "`pending`: queued or being retried; `cancelled`: kept in the log, never sent (its client lost the grant, or the subscription was disabled; a recovery queues it again).",
    },
    nextAttemptAt: {
      ...nullableTimestamp,
      description: "When it is tried next; null once it succeeded, failed, was refused or cancelled.",
    },
    createdAt: timestamp,
    payload: { description: "The request body, as sent." },
    attempts: {
      type: "array",
      items: {
        type: "object",
        required: [
          "number",
          "trigger",
          "attemptedAt",
          "statusCode",
          "error",
          "durationMs",
          "responseHeaders",
          "responseBody",
          "responseBodyTruncated",
          "pausedUntil",
        ],
        properties: {
          number: { type: "integer", minimum: 1, description: "1 for the delivery's first attempt, 2 for the next..." },
          trigger: {
            enum: [...ATTEMPT_TRIGGERS],
            description:
              "Why it was made: the delivery's first (`scheduled`; `test` for a test event), after a failed one (`retry`), or asked for again (`redelivery`, `recovery`).",
          },
          attemptedAt: timestamp,
          statusCode: {
            type: ["integer", "null"],
            description: "The receiver's HTTP status; null when it gave none (see `error`).",
          },
          error: { type: ["string", "null"] },
          durationMs: { type: "number", minimum: 0 },
          responseHeaders: {
            type: ["object", "null"],
            additionalProperties: { type: "string" },
            maxProperties: RESPONSE_HEADERS_MAX,
            description: `The answer's headers (lower-case names), at most ${RESPONSE_HEADERS_MAX} in ${RESPONSE_HEADERS_MAX_BYTES} bytes, without \`set-cookie\` and the hop-by-hop ones (\`connection\`, \`keep-alive\`...); null when there was no answer.`,
          },
          responseBody: {
            type: ["string", "null"],
            description: `The first ${RESPONSE_BODY_MAX_BYTES} bytes of the answer's body, as UTF-8 text; null when there was no answer. The request's \`X-WEBHOOK-KEY\` values are replaced by \`${REDACTED}\` wherever they appear.`,
          },
          responseBodyTruncated: { type: "boolean", description: "The body was longer than `responseBody`." },
          pausedUntil: {
            ...nullableTimestamp,
            description:
              "The answer was a 429 or 503 whose `Retry-After` was honoured: nothing is sent to this endpoint before this time, and the attempt spent no retry.",
          },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

export const Recovery = {
  type: "object",
  description:
    "A recovery: the subscription's deliveries of a window queued again in the background, and how far it got.",
  required: [
    "id",
    "subscriptionId",
    "status",
    "since",
    "until",
    "all",
    "examined",
    "queued",
    "createdAt",
    "finishedAt",
  ],
  properties: {
    id: { type: "integer" },
    subscriptionId: { type: "integer" },
    status: {
      enum: ["queued", "running", "done"],
      description: "`queued` until a webhooks process takes it, `running`, then `done`.",
    },
    since: timestamp,
    until: { ...timestamp, description: "The window's end: as asked, or when the recovery was asked for." },
    all: { type: "boolean", description: "Every delivery of the window is queued again, the successful ones too." },
    examined: { type: "integer", minimum: 0, description: "Deliveries of the window looked at so far." },
    queued: {
      type: "integer",
      minimum: 0,
      description: "Of those, how many were queued again (those already pending are on their way).",
    },
    createdAt: timestamp,
    finishedAt: nullableTimestamp,
  },
  additionalProperties: false,
} as const;

const nullableNumber = { type: ["number", "null"], minimum: 0 } as const;

export const SubscriptionStats = {
  type: "object",
  description:
    "A subscription's health: its attempts over the last 24 hours or 7 days, and bucket by bucket in them; its backlog, its latest success and failure.",
  required: ["id", "status", "window", "backlog", "lastSuccessAt", "lastFailure", "failingSince", "series"],
  properties: {
    id: { type: "integer" },
    status: subscriptionProperties.status,
    window: {
      type: "object",
      required: ["hours", "attempts", "succeeded", "successRate", "latencyMs"],
      properties: {
        hours: { type: "integer", description: "The window the figures cover, up to now." },
        attempts: { type: "integer", minimum: 0 },
        succeeded: { type: "integer", minimum: 0, description: "Attempts answered 2xx." },
        successRate: { ...nullableNumber, maximum: 1, description: "succeeded / attempts; null without attempts." },
        latencyMs: {
          type: ["object", "null"],
          description: "Attempt durations in milliseconds; null without attempts.",
          required: ["p50", "p95", "max"],
          properties: { p50: nullableNumber, p95: nullableNumber, max: nullableNumber },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    backlog: { type: "integer", minimum: 0, description: "Deliveries waiting to be sent." },
    lastSuccessAt: {
      ...nullableTimestamp,
      description:
        "The latest success, to the second: while a subscription keeps succeeding, each webhooks process notes its successes at most once a second.",
    },
    lastFailure: {
      type: ["object", "null"],
      required: ["at", "statusCode", "error"],
      properties: {
        at: timestamp,
        statusCode: {
          type: ["integer", "null"],
          description: "The receiver's HTTP status; null when it gave none (see `error`).",
        },
        error: { type: ["string", "null"] },
      },
      additionalProperties: false,
    },
    failingSince: { ...nullableTimestamp, description: "Since when every attempt failed; null after a success." },
    series: {
      type: "object",
      description:
        "The window bucket by bucket (UTC hours or days), oldest first, the current bucket (up to now) last; a bucket without attempts has zeros and nulls.",
      required: ["bucket", "points"],
      properties: {
        bucket: { enum: ["hour", "day"] },
        points: {
          type: "array",
          items: {
            type: "object",
            required: ["start", "attempts", "succeeded", "successRate", "latencyMs"],
            properties: {
              start: timestamp,
              attempts: { type: "integer", minimum: 0 },
              succeeded: { type: "integer", minimum: 0 },
              successRate: { ...nullableNumber, maximum: 1 },
              latencyMs: {
                type: ["object", "null"],
                required: ["p50", "p95"],
                properties: { p50: { type: "number", minimum: 0 }, p95: { type: "number", minimum: 0 } },
                additionalProperties: false,
              },
            },
            additionalProperties: false,
          },
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

export const FeedEvent = {
  type: "object",
  description:
    "An event of the feed (`GET /api/v1/events`): what every webhook of it carries, whether or not you subscribed.",
  required: ["webhookId", "event", "createdAt", "body"],
  properties: {
    webhookId: {
      type: "string",
      description: "The `webhook-id` header of every delivery of this event, to every subscription: deduplicate on it.",
    },
    event,
    createdAt: { ...timestamp, description: "When the change that raised it was made." },
    body: {
      description:
        "The webhook body: its JSON is byte for byte the body a delivery of this event sends (the event catalogue gives its schema).",
    },
  },
  additionalProperties: false,
  examples: [
    {
      webhookId: "msg_9b2f0c4e1d7a43e8a5c6b1f0d2e3a4b5",
      event: "sales_order_validated",
      createdAt: "2026-05-01T09:30:00.000Z",
      body: { id: 42, code: "ORD-20260501-000042", status: "validated" },
    },
  ],
} as const;
