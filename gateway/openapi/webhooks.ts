/**
 * The `webhooks` section: the requests this service sends to subscribers, one per event.
 */
import { EVENTS, type EventName } from "../../shared/outbox";
import { ref } from "./components";

/** The body of each event: the representation of the entity concerned. */
const BODIES: Record<EventName, { schema: string; summary: string }> = {
  sales_order_created: { schema: "Order", summary: "An order was created." },
  sales_order_validated: { schema: "Order", summary: "An order was validated." },
  sales_order_cancelled: { schema: "Order", summary: "An order was cancelled." },
  contact_reference_created: { schema: "ContactReference", summary: "A partner registered a new contact reference." },
};

function header(name: string, description: string, schema: Record<string, unknown>) {
  return { name, in: "header", required: true, description, schema };
}

function webhookHeaders(event: EventName) {
  return [
    header("X-WEBHOOK-EVENT", "Name of the triggering event.", { const: event }),
    header("X-WEBHOOK-KEY", "The `key` of the subscription (from `PUT /api/v1/webhooks`): check it to know the request is ours.", { type: "string" }),
    header("User-Agent", "`<product>/<version>` of the sending software.", { type: "string", pattern: "^[^/\\s]+/\\S+" }),
    header("webhook-id", "Standard Webhooks: the delivery's id, the same on every retry; deduplicate on it (delivery is at least once).", { type: "string" }),
    header("webhook-timestamp", "Standard Webhooks: Unix time (seconds) of this attempt.", { type: "string", pattern: "^\\d+$" }),
    header(
      "webhook-signature",
      "Standard Webhooks: `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the subscription's `secret`.",
      { type: "string", pattern: "^v1,\\S+" },
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
          summary: BODIES[event].summary,
          description:
            "Sent to every subscription of this event that may see the entity. Any 2xx answer is success; anything else, " +
            "or no answer within the time-out, is retried with exponential back-off for about a day.",
          security: [],
          parameters: webhookHeaders(event),
          requestBody: { required: true, content: { "application/json": { schema: ref("schemas", BODIES[event].schema) } } },
          responses: {
            "2XX": { description: "Received. The body of the answer is ignored." },
            default: { description: "Not received: the delivery is retried later." },
          },
        },
      },
    ]),
  );
}
