/**
 * The `webhooks` section: the requests this service sends to subscribers, one per event of the
 * event contract (shared/messaging/events.ts), whose body is the representation of the entity concerned.
 */
import { DOMAIN_EVENTS, EVENTS, type EventName } from "../../shared/messaging/events";
import { ref } from "./components";

function header(name: string, description: string, schema: Record<string, unknown>, required = true) {
  return { name, in: "header", required, description, schema };
}

function webhookHeaders(event: EventName) {
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
    EVENTS.map((event) => [
      event,
      {
        post: {
          operationId: `webhook_${event}`,
          tags: ["Webhooks"],
          summary: DOMAIN_EVENTS[event].summary,
          description:
            `${DOMAIN_EVENTS[event].meaning} ` +
            "Sent to every subscription of this event that may see the entity. Any 2xx answer is success; anything else, " +
            "or no answer within the time-out, is retried with exponential back-off for about a day.",
          security: [],
          parameters: webhookHeaders(event),
          requestBody: {
            required: true,
            content: { "application/json": { schema: ref("schemas", DOMAIN_EVENTS[event].body) } },
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
