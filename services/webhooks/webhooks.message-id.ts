/**
 * The `webhook-id` of an event (Standard Webhooks' message id): one per event, the same for every
 * subscriber, every attempt and redelivery, and the events feed (docs/webhooks.md). Derived from
 * the event's id and when it occurred rather than drawn at random, so any part of the service
 * names it without storing it first; the time keeps it unique even where an outbox's ids start
 * again (a database restored or re-created), which would otherwise hand a receiver that
 * de-duplicates on `webhook-id` an old id for a new event. A test event draws its own.
 */
import { createHash } from "node:crypto";

export function webhookIdOf(event: { id: string; occurredAt: string }): string {
  const digest = createHash("sha256").update(`${event.id}@${event.occurredAt}`).digest("hex");
  return `msg_${digest.slice(0, 32)}`;
}
