/** The JSON shapes of the webhooks service, as its API answers them. */
import type { DeliveredEventName, EventName } from "../../shared/messaging/events";
import type { DeliveryStatus } from "./webhooks.params";
import type { AttemptRow } from "./webhooks.attempts.repository";
import type { AttemptTrigger } from "./webhooks.deliveries.repository";
import type { DeliveryRow } from "./webhooks.deliveries.repository";
import type { RecoveryRow, RecoveryStatus } from "./webhooks.recoveries.repository";
import type { SubscriptionRow, SubscriptionStatus } from "./webhooks.subscriptions.repository";
import type { Ordering } from "./webhooks.params";
import type { SignatureScheme } from "./webhooks.signing";

export interface WebhookEvent {
  event: EventName;
  description: string;
}

export interface Subscription {
  id: number;
  /** `disabled`: it receives nothing until its owner enables it (POST /webhooks/{id}/enable). */
  status: SubscriptionStatus;
  disabledAt: string | null;
  disabledReason: string | null;
  event: EventName;
  url: string;
  createdAt: string;
  rotatedAt: string | null;
  /** `ed25519`: requests also carry a `v1a` signature that `publicKey` verifies. */
  signature: SignatureScheme;
  /** `whpk_` + base64 of the Ed25519 public key; null for `hmac`. */
  publicKey: string | null;
  /** Until when the key and secret the last rotation replaced still sign beside the new ones; null when they no longer do. */
  previousSecretUntil: string | null;
  description: string | null;
  /** The custom headers sent with every delivery, by name: their values are never shown again. */
  headerNames: string[];
  /** Deliveries per second its endpoint accepts; null for no limit. */
  rateLimit: number | null;
  /** `per_entity`: one entity's deliveries go one at a time, in commit order (webhooks.ordering.ts). */
  ordering: Ordering;
}

/** Only when subscribing for the first time and when rotating: the one chance to read them. */
export interface SubscriptionWithSecrets extends Subscription {
  /** Sent as X-WEBHOOK-KEY with every request. */
  key: string;
  /** Signs every request (Standard Webhooks, `whsec_` form). */
  secret: string;
}

export interface Attempt {
  /** 1 for the delivery's first attempt, 2 for the next... */
  number: number;
  /** Why it was made: the delivery's first (`scheduled`, `test`), after a failure (`retry`), or asked for again. */
  trigger: AttemptTrigger;
  attemptedAt: string;
  /** The receiver's HTTP status; null when it gave none (see `error`). */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** Its answer's headers, bounded (webhooks.response-capture.ts); null when it gave no answer. */
  responseHeaders: Record<string, string> | null;
  /** The start of its answer's body as text; null when it gave no answer. */
  responseBody: string | null;
  responseBodyTruncated: boolean;
  /** Its answer was a honoured Retry-After: no attempt to its endpoint before this time. */
  pausedUntil: string | null;
}

export interface Delivery {
  id: number;
  webhookId: string;
  eventId: string;
  event: DeliveredEventName;
  status: DeliveryStatus;
  /** When it is (re)tried next; null once it succeeded, failed or was refused. */
  nextAttemptAt: string | null;
  createdAt: string;
  /** The request body, as sent. */
  payload: unknown;
  attempts: Attempt[];
}

export function presentSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    event: row.event,
    url: row.url,
    createdAt: row.created_at.toISOString(),
    rotatedAt: row.rotated_at?.toISOString() ?? null,
    status: row.status,
    disabledAt: row.disabled_at?.toISOString() ?? null,
    disabledReason: row.disabled_reason,
    signature: row.public_key ? "ed25519" : "hmac",
    publicKey: row.public_key,
    previousSecretUntil:
      row.previous_until && row.previous_until.getTime() > Date.now() ? row.previous_until.toISOString() : null,
    description: row.description,
    headerNames: row.header_names,
    rateLimit: row.rate_limit,
    ordering: row.ordering,
  };
}

export function presentWithSecrets(row: SubscriptionRow): SubscriptionWithSecrets {
  return { ...presentSubscription(row), key: row.key, secret: row.secret };
}

/** `index`: its place among the delivery's attempts, oldest first (they are pruned only with it). */
function presentAttempt(row: AttemptRow, index: number): Attempt {
  return {
    number: index + 1,
    trigger: row.trigger,
    attemptedAt: row.attempted_at.toISOString(),
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    responseHeaders: row.response_headers,
    responseBody: row.response_body,
    responseBodyTruncated: row.response_body_truncated,
    pausedUntil: row.paused_until?.toISOString() ?? null,
  };
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

/** A recovery job (POST /webhooks/{id}/recover) and how far it got. */
export interface Recovery {
  id: number;
  subscriptionId: number;
  status: RecoveryStatus;
  since: string;
  /** The window's end: as asked, or when it was asked. */
  until: string;
  all: boolean;
  /** Deliveries of the window looked at so far. */
  examined: number;
  /** Of those, how many were queued again. */
  queued: number;
  createdAt: string;
  finishedAt: string | null;
}

export function presentRecovery(row: RecoveryRow): Recovery {
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    status: row.status,
    since: row.since.toISOString(),
    until: row.until.toISOString(),
    all: row.all_deliveries,
    examined: row.examined,
    queued: row.queued,
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}
