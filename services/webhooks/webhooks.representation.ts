/** The JSON shapes of the webhooks service, as its endpoints return them. */
import type { EventName } from "../../shared/events";
import type { DeliveryStatus } from "./webhooks.params";
import type { AttemptRow, DeliveryRow, SubscriptionRow } from "./webhooks.repository";

export interface WebhookEvent {
  event: EventName;
  description: string;
}

export interface Subscription {
  id: number;
  event: EventName;
  url: string;
  createdAt: string;
  rotatedAt: string | null;
}

/** Only when subscribing for the first time and when rotating: the one chance to read them. */
export interface SubscriptionWithSecrets extends Subscription {
  /** Sent as X-WEBHOOK-KEY with every request. */
  key: string;
  /** Signs every request (Standard Webhooks, `whsec_` form). */
  secret: string;
}

export interface Attempt {
  attemptedAt: string;
  /** The receiver's HTTP status; null when it gave none (see `error`). */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface Delivery {
  id: number;
  webhookId: string;
  eventId: string;
  event: EventName;
  status: DeliveryStatus;
  /** When it is (re)tried next; null once it succeeded, failed or was refused. */
  nextAttemptAt: string | null;
  createdAt: string;
  /** The request body, as sent. */
  payload: unknown;
  attempts: Attempt[];
}

export function presentSubscription(row: SubscriptionRow): Subscription {
  return { id: row.id, event: row.event, url: row.url, createdAt: row.created_at.toISOString(), rotatedAt: row.rotated_at?.toISOString() ?? null };
}

export function presentWithSecrets(row: SubscriptionRow): SubscriptionWithSecrets {
  return { ...presentSubscription(row), key: row.key, secret: row.secret };
}

function presentAttempt(row: AttemptRow): Attempt {
  return { attemptedAt: row.attempted_at.toISOString(), statusCode: row.status_code, error: row.error, durationMs: row.duration_ms };
}

export function presentDelivery(row: DeliveryRow, attempts: AttemptRow[]): Delivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    event: row.event,
    status: row.status,
    nextAttemptAt: row.status === "pending" ? (row.next_attempt_at?.toISOString() ?? null) : null,
    createdAt: row.created_at.toISOString(),
    payload: JSON.parse(row.body) as unknown,
    attempts: attempts.map(presentAttempt),
  };
}
