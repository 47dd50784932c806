/**
 * The `webhooks` section: the requests this service sends to subscribers, one per event of the
 * event contract (shared/messaging/events.ts) — each domain event, whose body is the
 * representation of the entity concerned, and each event about a subscription itself
 * (`webhook_test`) — and the same body schemas made self-contained for the event catalogue
 * (`GET /api/v1/webhooks/event_types`).
 */
import {
  DOMAIN_EVENTS,
  EVENTS,
  isSubscriptionEvent,
  SUBSCRIPTION_EVENT_NAMES,
  SUBSCRIPTION_EVENTS,
  type DeliveredEventName,
} from "../../shared/messaging/events";
import { componentSchemas, ref } from "./components";
import type { JsonSchema } from "./fastest-to-json-schema";
import type { ServiceDescription } from "./service-description";

/** Every event a subscriber can receive: the domain events, then those about a subscription itself. */
const DELIVERED: readonly DeliveredEventName[] = [...EVENTS, ...SUBSCRIPTION_EVENT_NAMES];

/** What the document says of an event, from the contract. */
function declared(event: DeliveredEventName): { body: string; summary: string; meaning: string; sentTo: string } {
  return isSubscriptionEvent(event)
    ? { ...SUBSCRIPTION_EVENTS[event], sentTo: "Nobody subscribes to it: it goes to the subscription concerned only." }
    : { ...DOMAIN_EVENTS[event], sentTo: "Sent to every subscription of this event that may see the entity." };
}

function header(name: string, description: string, schema: Record<string, unknown>, required = true) {
  return { name, in: "header", required, description, schema };
}

function webhookHeaders(event: DeliveredEventName) {
  return [
    header("X-WEBHOOK-EVENT", "Name of the triggering event.", { const: event }),
    header(
      "X-WEBHOOK-KEY",
      "The `key` of the subscription (from `PUT /api/v1/webhooks`): check it to know the request is ours.",
      { type: "string" },
    ),
    header(
      "X-WEBHOOK-PREVIOUS-KEY",
      "Only during a rotation's overlap (24 h by default): the `key` the rotation replaced. Accept the request when either key header holds the key you know.",
      { type: "string" },
      false,
    ),
    header("User-Agent", "`<product>/<version>` of the sending software.", {
      type: "string",
      pattern: "^[^/\\s]+/\\S+",
    }),
    header(
      "webhook-id",
      "Standard Webhooks: the delivery's id, the same on every retry; deduplicate on it (delivery is at least once).",
      { type: "string" },
    ),
    header("webhook-timestamp", "Standard Webhooks: Unix time (seconds) of this attempt.", {
      type: "string",
      pattern: "^\\d+$",
    }),
    header(
      "webhook-signature",
      "Standard Webhooks: space-separated signatures of `<webhook-id>.<webhook-timestamp>.<body>`: `v1,<base64 HMAC-SHA256>` keyed with the " +
        "subscription's `secret`, preceded by `v1a,<base64 Ed25519>` for an `ed25519` subscription (verify with its `publicKey`). During a " +
        "rotation's overlap the replaced secret's (and key pair's) signatures follow. Accept the request when any one verifies.",
      { type: "string", pattern: "^v1a?,\\S+( v1a?,\\S+)*$" },
    ),
  ];
}

export function webhookOperations(): Record<string, unknown> {
  return Object.fromEntries(
    DELIVERED.map((event) => [
      event,
      {
        post: {
          operationId: `webhook_${event}`,
          tags: ["Webhooks"],
          summary: declared(event).summary,
          description:
            `${declared(event).meaning} ${declared(event).sentTo} ` +
            "Any 2xx answer is success; anything else, or no answer within the time-out, is retried with exponential back-off for about a day.",
          security: [],
          parameters: webhookHeaders(event),
          requestBody: {
            required: true,
            content: { "application/json": { schema: ref("schemas", declared(event).body) } },
          },
          responses: {
            "2XX": { description: "Received. The body of the answer is ignored." },
            default: { description: "Not received: the delivery is retried later." },
          },
        },
      },
    ]),
  );
}

const COMPONENT_REF = /^#\/components\/schemas\/(.+)$/;

/**
 * Each event's body schema as the `webhooks` section names it, made self-contained: the
 * component schemas it refers to, at any depth, are copied under `$defs` and referred to there.
 */
export function webhookBodySchemas(services: readonly ServiceDescription[]): Record<DeliveredEventName, JsonSchema> {
  const components = componentSchemas(services);
  return Object.fromEntries(
    DELIVERED.map((event) => [event, selfContained(components, declared(event).body)]),
  ) as Record<DeliveredEventName, JsonSchema>;
}

function selfContained(components: Record<string, JsonSchema>, name: string): JsonSchema {
  const defs: Record<string, JsonSchema> = {};
  const wanted: string[] = [];
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== "object") return node;
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => {
        const target = key === "$ref" && typeof value === "string" ? COMPONENT_REF.exec(value)?.[1] : undefined;
        if (target === undefined) return [key, rewrite(value)];
        if (!(target in defs) && !wanted.includes(target)) wanted.push(target);
        return [key, `#/$defs/${target}`];
      }),
    );
  };
  const root = rewrite(components[name]) as JsonSchema;
  for (let next = wanted.shift(); next !== undefined; next = wanted.shift()) {
    defs[next] = {};
    defs[next] = rewrite(components[next]) as JsonSchema;
  }
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    ...root,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
}
