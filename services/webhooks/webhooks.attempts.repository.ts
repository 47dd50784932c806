/**
 * SQL of the `attempts` table: each attempt of a delivery, recorded with the delivery's state
 * after it, and read back for the subscription's owner.
 */
import { prepared } from "../../shared/database/prepared-statement";
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import type { AttemptTrigger, ClaimedDelivery, UnstoredDelivery } from "./webhooks.deliveries.repository";
import type { CapturedResponse } from "./webhooks.response-capture";
import { deferBehindRetries } from "./webhooks.ordering";
import type { DeliveryUpdate } from "./webhooks.retry-policy";

const S = "webhooks";

export interface AttemptRow {
  id: number;
  delivery_id: number;
  attempted_at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  trigger: AttemptTrigger;
  response_headers: Record<string, string> | null;
  response_body: string | null;
  response_body_truncated: boolean;
  paused_until: Date | null;
}

/** The attempts of these deliveries, oldest first, by delivery id. */
export async function attemptsOf(db: Db, deliveryIds: number[]): Promise<Map<number, AttemptRow[]>> {
  const byDelivery = new Map<number, AttemptRow[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return byDelivery;
  const rows = (await db
    .withSchema(S)
    .table("attempts")
    .whereIn("delivery_id", deliveryIds)
    .orderBy("id")) as AttemptRow[];
  for (const row of rows) byDelivery.get(row.delivery_id)?.push(row);
  return byDelivery;
}

export interface AttemptRecord {
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  trigger: AttemptTrigger;
  /** What the endpoint answered, bounded; absent when it gave no answer. */
  response?: CapturedResponse;
  /** The answer was a honoured Retry-After: its endpoint is paused for the delivery's wait. */
  paused?: boolean;
}

/** One finished attempt of a claimed delivery, and the delivery's state after it. */
export interface RecordedAttempt {
  claim: Pick<ClaimedDelivery, "id" | "claim_token" | "attempt_count" | "in_line">;
  attempt: AttemptRecord;
  next: DeliveryUpdate;
}

/** The attempt's columns, and the delivery's after it, as the recording statements read them. */
function recordedRow({ claim, attempt, next }: RecordedAttempt) {
  return {
    id: claim.id,
    claim_token: claim.claim_token,
    status: next.status,
    attempt_count: claim.attempt_count + (next.spendsRetry === false ? 0 : 1),
    retry_in_ms: next.retryInMs,
    attempted_at: attempt.attemptedAt.toISOString(),
    status_code: attempt.statusCode,
    error: attempt.error,
    duration_ms: attempt.durationMs,
    trigger: attempt.trigger,
    response_headers: attempt.response?.headers ?? null,
    response_body: attempt.response?.body ?? null,
    response_body_truncated: attempt.response?.bodyTruncated ?? false,
    paused: attempt.paused === true,
  };
}

/** The input rows as a relation (`input`), for both recording statements. */
const INPUT_COLUMNS = `id bigint, claim_token uuid, status text, attempt_count int, retry_in_ms bigint,
  attempted_at timestamptz, status_code int, error text, duration_ms int, trigger text, response_headers jsonb,
  response_body text, response_body_truncated boolean, paused boolean`;

/** The attempt rows of `input` whose delivery is in `present` (a relation of ids). */
function insertAttemptsOf(present: string): string {
  return `INSERT INTO ${S}.attempts (delivery_id, attempted_at, status_code, error, duration_ms,
                              trigger, response_headers, response_body, response_body_truncated, paused_until)
     SELECT i.id, i.attempted_at, i.status_code, i.error, i.duration_ms,
            i.trigger, i.response_headers, i.response_body, i.response_body_truncated,
            CASE WHEN i.paused THEN now() + i.retry_in_ms * interval '1 millisecond' END
       FROM input i
      WHERE ${present}`;
}

/**
 * Records finished attempts, many in one statement (so atomic on its own, one transaction for
 * the lot): each attempt row, and, while its claim still holds, its delivery's new state. An
 * attempt is kept even when the delivery was redelivered meanwhile; it is dropped with the
 * delivery when the subscription was deleted. A delivery in a per-entity line that is retried
 * defers the rest of its line to its retry; for one that settles, the caller releases the next
 * of its line once this is committed (`releaseNextOf`, webhooks.ordering.ts).
 */
export async function recordAttempts(db: Knex, recorded: readonly RecordedAttempt[]): Promise<void> {
  if (recorded.length === 0) return;
  const rows = recorded.map(recordedRow);
  // The deliveries are found by their ids as an array, which the planner counts, through the
  // primary key: joined to the JSON rows (which it guesses at 100), a fresh table of a few
  // thousand rows was read whole, twice per batch (bench:delivery-writes: 420 rows read per delivery).
  const ids = rows.map((r) => r.id);
  // Only a delivery in a per-entity line whose retry is scheduled defers the rest of its line.
  const deferring = recorded.some(({ claim, next }) => claim.in_line && next.retryInMs !== null);
  await prepared(
    db.raw(
      `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS i(${INPUT_COLUMNS})
     ), updated AS (
       UPDATE ??.deliveries d
          SET status = i.status, attempt_count = i.attempt_count, claim_token = NULL, updated_at = now(),
              -- Settled, it leaves its per-entity line (webhooks.ordering.ts).
              sequence = CASE WHEN i.status = 'pending' THEN d.sequence END,
              next_attempt_at = CASE WHEN i.retry_in_ms IS NULL THEN NULL ELSE now() + i.retry_in_ms * interval '1 millisecond' END,
              next_trigger = CASE WHEN i.retry_in_ms IS NULL THEN NULL ELSE 'retry' END
         FROM input i
        WHERE d.id = ANY(?::bigint[]) AND d.id = i.id AND d.claim_token = i.claim_token
       RETURNING d.id, d.subscription_id, d.entity_key, d.sequence, d.status, d.next_attempt_at
     )${deferring ? `, deferred AS (${deferBehindRetries("updated")})` : ""}
     -- Its delivery exists: it was just updated, or (redelivered or cancelled meanwhile) it is
     -- looked up; the usual batch, every claim holding, looks nothing up again.
     ${insertAttemptsOf(`i.id IN (SELECT id FROM updated)
         OR i.id IN (SELECT d.id FROM ${S}.deliveries d
                      WHERE d.id = ANY(ARRAY(SELECT id FROM input EXCEPT SELECT id FROM updated)))`)}`,
      [JSON.stringify(rows), S, ids],
    ),
  );
}

/** A first attempt of a delivery sent before it was stored, with what storing it needs. */
export interface RecordedFirstAttempt extends RecordedAttempt {
  claim: RecordedAttempt["claim"] &
    Pick<ClaimedDelivery, "subscription_id" | "webhook_id"> & { unstored: UnstoredDelivery };
}

/**
 * Records the first attempts of deliveries sent before they were stored, many in one statement:
 * each delivery is written once, already in its state after the attempt (on the success path,
 * `succeeded`: no row is updated), with its attempt. A delivery stored meanwhile (the event came
 * again to another replica) or whose subscription is gone is left as it is, and its attempt
 * with it.
 */
export async function recordFirstAttempts(db: Knex, recorded: readonly RecordedFirstAttempt[]): Promise<void> {
  if (recorded.length === 0) return;
  const rows = recorded.map((r) => ({
    ...recordedRow(r),
    subscription_id: r.claim.subscription_id,
    webhook_id: r.claim.webhook_id,
    event_id: r.claim.unstored.event_id,
    created_at: r.claim.unstored.created_at,
  }));
  await prepared(
    db.raw(
      `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb)
         AS i(${INPUT_COLUMNS}, subscription_id int, webhook_id text, event_id text, created_at timestamptz)
     ), stored AS (
       INSERT INTO ??.deliveries (id, subscription_id, event_id, webhook_id, status, attempt_count,
                                  next_attempt_at, next_trigger, created_at, updated_at)
       SELECT i.id, i.subscription_id, i.event_id, i.webhook_id, i.status, i.attempt_count,
              CASE WHEN i.retry_in_ms IS NULL THEN NULL ELSE now() + i.retry_in_ms * interval '1 millisecond' END,
              CASE WHEN i.retry_in_ms IS NULL THEN NULL ELSE 'retry' END, i.created_at, now()
         FROM input i
        WHERE EXISTS (SELECT 1 FROM ??.subscriptions s WHERE s.id = i.subscription_id)
       ON CONFLICT (event_id, subscription_id) DO NOTHING
       RETURNING id
     )
     ${insertAttemptsOf("i.id IN (SELECT id FROM stored)")}`,
      [JSON.stringify(rows), S, S],
    ),
  );
}
