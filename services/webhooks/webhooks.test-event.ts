/**
 * A test event on demand (POST /api/v1/webhooks/{id}/test): recorded as an event about the
 * subscription with one delivery to it, so it goes the real way — claimed by a dispatcher,
 * signed, logged, retried, listed in the deliveries — and only that subscription receives it.
 */
import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { TEST_EVENT } from "../../shared/messaging/events";
import { currentRequestId } from "../../shared/observability/request-context";
import { currentTraceparent } from "../../shared/observability/tracing";
import { insertSubscriptionEvent } from "./webhooks.deliveries.repository";
import type { SubscriptionRow } from "./webhooks.subscriptions.repository";

/** The body of a test event: what it is for, and which subscription asked for it. */
export interface TestEventBody {
  test: true;
  subscriptionId: number;
  /** The event the subscription receives otherwise. */
  event: string;
  url: string;
  requestedAt: string;
}

export function testEventBody(subscription: SubscriptionRow, requestedAt: Date): TestEventBody {
  return {
    test: true,
    subscriptionId: subscription.id,
    event: subscription.event,
    url: subscription.url,
    requestedAt: requestedAt.toISOString(),
  };
}

/**
 * How the id of an event about a subscription starts: `<event>-`, then a UUID. Unique like a
 * domain event's `<schema>-<outbox id>`, and never mistaken for one — which is how a search tells
 * a subscription's tests from its own event (webhooks.delivery-search.ts).
 */
export const subscriptionEventIdPrefix = (event: string): string => `${event}-`;

/** Queues a test delivery to this subscription (the caller holds it active); returns the delivery's id. */
export async function queueTestEvent(db: Knex, subscription: SubscriptionRow): Promise<number> {
  return insertSubscriptionEvent(db, {
    id: `${subscriptionEventIdPrefix(TEST_EVENT)}${randomUUID()}`,
    event: TEST_EVENT,
    subscription,
    body: JSON.stringify(testEventBody(subscription, new Date())),
    requestId: currentRequestId() ?? null,
    traceparent: currentTraceparent() ?? null,
  });
}
