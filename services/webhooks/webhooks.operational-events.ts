/**
 * What a subscription's owner is told about its deliveries (docs/webhooks.md, "Operational
 * events"), besides `webhook_endpoint_disabled` (webhooks.subscription-health.ts): each leaves
 * through this service's outbox in the transaction of the change it announces, so it exists if
 * and only if that change committed, and reaches the owner's subscriptions to it like any event.
 *
 * - `webhook_delivery_exhausted`: an attempt left its delivery `failed` because the retry
 *   schedule is spent (not a 410, which disables and is announced as such). A delivery of that
 *   very event does not announce itself: a failing subscription to it would otherwise feed itself.
 * - `webhook_endpoint_recovered`: an attempt succeeded on an active subscription that had been
 *   failing for at least one retry interval (the schedule's first pause), so a blip that the next
 *   attempt absorbs says nothing.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { eventsAppended, outboxRow, type NewEvent } from "../../shared/messaging/outbox";
import type { EventName } from "../../shared/messaging/events";
import type { AttemptRecord } from "./webhooks.attempts.repository";
import type { ClaimedDelivery } from "./webhooks.deliveries.repository";
import { deliveriesByIds } from "./webhooks.deliveries-by-id";
import type { DeliveryUpdate, Verdict } from "./webhooks.retry-policy";

const S = "webhooks";

/** The subscription an operational event is about, as its body names it. */
export interface SubscriptionSummary {
  id: number;
  event: EventName;
  url: string;
}

/** The body of `webhook_delivery_exhausted`. */
export interface DeliveryExhausted {
  subscription: SubscriptionSummary;
  delivery: { id: number; webhookId: string; eventId: string; event: string; createdAt: string; attempts: number };
  lastAttempt: { attemptedAt: string; statusCode: number | null; error: string | null };
}

/** The body of `webhook_endpoint_recovered`. */
export interface EndpointRecovered {
  subscription: SubscriptionSummary;
  /** When its unbroken run of failed attempts began. */
  failingSince: string;
  /** The attempt that succeeded. */
  recoveredAt: string;
}

/** A finished attempt as the outcome recorder holds it. */
export interface FinishedOutcome {
  delivery: ClaimedDelivery;
  attempt: AttemptRecord;
  verdict: Verdict;
  next: DeliveryUpdate;
}

/** Its delivery gave up after the whole schedule (a 410's `failed` is the disabling's to announce). */
export function exhaustsSchedule(f: FinishedOutcome): boolean {
  return (
    f.next.status === "failed" && f.verdict.kind === "failing" && f.delivery.event !== "webhook_delivery_exhausted"
  );
}

/** What announceExhausted reads of each delivery. */
const EXHAUSTED_COLUMNS = "id, webhook_id, event_id, created_at, attempt_count, subscription_id, status, updated_at";

/**
 * Appends `webhook_delivery_exhausted` for those of these attempts whose delivery the same
 * transaction has just failed (recordAttempts, which writes a delivery only while its claim
 * holds): `updated_at = now()` is that transaction's own time.
 */
export async function announceExhausted(trx: Knex.Transaction, gaveUp: readonly FinishedOutcome[]): Promise<void> {
  if (gaveUp.length === 0) return;
  const { rows } = await trx.raw<{
    rows: {
      id: number;
      webhook_id: string;
      event_id: string;
      created_at: Date;
      attempt_count: number;
      event: string;
      subscription_id: number;
      subscription_event: EventName;
      url: string;
      client_id: number;
    }[];
  }>(
    // By id first: `status = 'failed'` said of the table would let the planner read every delivery
    // that has not succeeded instead (webhooks.deliveries-by-id.ts).
    `WITH ${deliveriesByIds("d", EXHAUSTED_COLUMNS)}
     SELECT d.id, d.webhook_id, d.event_id, d.created_at, d.attempt_count, e.event,
            s.id AS subscription_id, s.event AS subscription_event, s.url, s.client_id
       FROM d
       JOIN ??.subscriptions s ON s.id = d.subscription_id
       JOIN ??.events e ON e.id = d.event_id
      WHERE d.status = 'failed' AND d.updated_at = now()`,
    [gaveUp.map((f) => f.delivery.id), S, S],
  );
  const attempts = new Map(gaveUp.map((f) => [Number(f.delivery.id), f.attempt]));
  const announced: NewEvent[] = rows.map((r) => {
    const attempt = attempts.get(Number(r.id))!;
    const body: DeliveryExhausted = {
      subscription: { id: r.subscription_id, event: r.subscription_event, url: r.url },
      delivery: {
        id: Number(r.id),
        webhookId: r.webhook_id,
        eventId: r.event_id,
        event: r.event,
        createdAt: r.created_at.toISOString(),
        attempts: r.attempt_count,
      },
      lastAttempt: {
        attemptedAt: attempt.attemptedAt.toISOString(),
        statusCode: attempt.statusCode,
        error: attempt.error,
      },
    };
    return { event: "webhook_delivery_exhausted", ownerClientId: r.client_id, entityId: r.subscription_id, data: body };
  });
  await appendAll(trx, announced);
}

/**
 * Runs `note` (the batch's health figures: webhooks.subscription-health.ts `noteAttemptsHealth`)
 * and, in the same transaction, announces `webhook_endpoint_recovered` for each active
 * subscription the batch brings back after `recoveredAfterMs` or more of failures. Only a batch
 * whose latest attempt for some subscription succeeded can; any other is noted as before,
 * without a transaction.
 */
export async function announcingRecoveries<T>(
  db: Knex,
  notes: readonly { subscriptionId: number; lastSuccessAt: Date | null; failingFrom: Date | null }[],
  recoveredAfterMs: number,
  note: (db: Db) => Promise<T>,
): Promise<T> {
  const succeeding = notes.filter((n) => n.lastSuccessAt !== null && n.failingFrom === null);
  if (succeeding.length === 0) return note(db);
  return db.transaction(async (trx) => {
    // Every noted row, locked in id order as the figures' statement locks them: replicas never wait in a circle.
    const before = await failingBefore(
      trx,
      notes.map((n) => n.subscriptionId),
    );
    const figures = await note(trx);
    const recovered: NewEvent[] = [];
    for (const { subscriptionId, lastSuccessAt } of succeeding) {
      const was = before.get(subscriptionId);
      if (!was || lastSuccessAt!.getTime() - was.failing_since.getTime() < recoveredAfterMs) continue;
      const body: EndpointRecovered = {
        subscription: { id: was.id, event: was.event, url: was.url },
        failingSince: was.failing_since.toISOString(),
        recoveredAt: lastSuccessAt!.toISOString(),
      };
      recovered.push({
        event: "webhook_endpoint_recovered",
        ownerClientId: was.client_id,
        entityId: was.id,
        data: body,
      });
    }
    await appendAll(trx, recovered);
    return figures;
  });
}

/** Of these subscriptions, the active ones failing now, locked (FOR NO KEY UPDATE, in id order) until the transaction ends. */
async function failingBefore(
  trx: Db,
  ids: number[],
): Promise<Map<number, { id: number; client_id: number; event: EventName; url: string; failing_since: Date }>> {
  const { rows } = await trx.raw<{
    rows: {
      id: number;
      client_id: number;
      event: EventName;
      url: string;
      status: string;
      failing_since: Date | null;
    }[];
  }>(
    `SELECT id, client_id, event, url, status, failing_since FROM ??.subscriptions
      WHERE id = ANY(?::int[]) ORDER BY id FOR NO KEY UPDATE`,
    [S, ids],
  );
  return new Map(
    rows
      .filter((r) => r.status === "active" && r.failing_since !== null)
      .map((r) => [r.id, { ...r, failing_since: r.failing_since! }]),
  );
}

async function appendAll(trx: Knex.Transaction, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await trx
    .withSchema(S)
    .table("outbox")
    .insert(events.map((e) => outboxRow(e)));
  eventsAppended(trx, S);
}
