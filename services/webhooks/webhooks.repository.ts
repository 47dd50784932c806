/**
 * The only file of the webhooks service that touches knex.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/db";
import type { DomainEvent, EventName } from "../../shared/events";
import { fetchPage, type PageQuery } from "../../shared/paging";
import { secretBox } from "../../shared/secrets-keyring";
import { BIGINT_ID_MAX } from "../../shared/params";
import type { DeliveryStatus } from "./webhooks.params";

const S = "webhooks";

export interface SubscriptionRow {
  id: number;
  client_id: number;
  event: EventName;
  url: string;
  /** Sealed at rest (shared/secret-box.ts); in clear only in what insertSubscription and rotateSecrets return. */
  key: string;
  secret: string;
  created_at: Date;
  rotated_at: Date | null;
}

export interface DeliveryRow {
  id: number;
  subscription_id: number;
  event_id: string;
  event: EventName;
  body: string;
  webhook_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  id: number;
  delivery_id: number;
  attempted_at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/** A delivery a dispatcher has claimed, with what it needs to send it. */
export interface ClaimedDelivery {
  id: number;
  claim_token: string;
  webhook_id: string;
  attempt_count: number;
  event: EventName;
  body: string;
  url: string;
  /** As stored, sealed: the sender opens them just before signing. */
  key: string;
  secret: string;
  request_id: string | null;
  /** Who subscribed, and whose entity the event is about: the dispatcher re-checks the grants. */
  client_id: number;
  owner_client_id: number;
  /** Where it goes, as the dispatcher counts its slots: the URL's origin (scheme, host, port). */
  endpoint: string;
}

// ---- subscriptions -------------------------------------------------------------------------

export async function insertSubscription(
  db: Db,
  s: { clientId: number; event: EventName; url: string; key: string; secret: string },
): Promise<SubscriptionRow | null> {
  const box = secretBox();
  const rows = (await db.withSchema(S).table("subscriptions")
    .insert({ client_id: s.clientId, event: s.event, url: s.url, key: box.seal(s.key), secret: box.seal(s.secret) })
    .onConflict(["client_id", "event", "url"]).ignore()
    .returning("*")) as SubscriptionRow[];
  return rows[0] ? { ...rows[0], key: s.key, secret: s.secret } : null;
}

export async function findSubscriptionByTarget(db: Db, clientId: number, event: EventName, url: string): Promise<SubscriptionRow | undefined> {
  return db.withSchema(S).table("subscriptions").where({ client_id: clientId, event, url }).first();
}

export async function findSubscription(db: Db, clientId: number, id: number): Promise<SubscriptionRow | undefined> {
  return db.withSchema(S).table("subscriptions").where({ id, client_id: clientId }).first();
}

export async function listSubscriptions(db: Db, clientId: number, page: PageQuery) {
  const query = db.withSchema(S).table("subscriptions").where({ client_id: clientId }).select("*");
  return fetchPage<SubscriptionRow & Record<string, unknown>>(query, page, "id", (r) => r.id);
}

/** Deletes the subscription with its deliveries and their attempts; false when there was none. */
export async function deleteSubscription(db: Db, clientId: number, id: number): Promise<boolean> {
  // Raw: knex-pglite answers `.delete()` with its whole response instead of the row count.
  const result = await db.raw(`DELETE FROM ??.subscriptions WHERE id = ? AND client_id = ? RETURNING id`, [S, id, clientId]);
  return (result as { rows: unknown[] }).rows.length > 0;
}

export async function rotateSecrets(db: Db, clientId: number, id: number, key: string, secret: string): Promise<SubscriptionRow | undefined> {
  const box = secretBox();
  const [row] = (await db.withSchema(S).table("subscriptions").where({ id, client_id: clientId })
    .update({ key: box.seal(key), secret: box.seal(secret), rotated_at: db.fn.now() }).returning("*")) as SubscriptionRow[];
  return row && { ...row, key, secret };
}

// ---- fan-out -------------------------------------------------------------------------------

/**
 * The subscriptions that may receive this event: to its event name and created before the
 * event happened (an event replayed later reaches only those that existed then). Whose client
 * hears it is decided from the current grants (webhooks.events.ts `hears`). Timestamps compare
 * at the millisecond, the precision of `occurredAt`.
 */
export async function candidateSubscriptions(db: Db, e: DomainEvent): Promise<{ id: number; client_id: number }[]> {
  return (await db.withSchema(S).table("subscriptions")
    .where({ event: e.event })
    .andWhereRaw("date_trunc('milliseconds', created_at) <= ?", [e.occurredAt])
    .select("id", "client_id")) as { id: number; client_id: number }[];
}

export async function insertEvent(db: Db, e: DomainEvent, body: string): Promise<void> {
  await db.withSchema(S).table("events").insert({
    id: e.id, event: e.event, owner_client_id: e.ownerClientId, entity: e.entity, entity_id: e.entityId, occurred_at: e.occurredAt, body,
    request_id: e.requestId ?? null,
  }).onConflict("id").ignore();
}

/** One pending delivery per subscription, due now; existing (event, subscription) pairs are kept. Returns how many were new. */
export async function insertDeliveries(db: Db, eventId: string, subscriptionIds: number[]): Promise<number> {
  if (subscriptionIds.length === 0) return 0;
  const rows = subscriptionIds.map((subscriptionId) => ({
    subscription_id: subscriptionId,
    event_id: eventId,
    webhook_id: db.raw("'msg_' || replace(gen_random_uuid()::text, '-', '')"),
    next_attempt_at: db.fn.now(),
  }));
  const inserted = await db.withSchema(S).table("deliveries").insert(rows).onConflict(["event_id", "subscription_id"]).ignore().returning("id");
  return inserted.length;
}

// ---- deliveries as subscribers see them ----------------------------------------------------

function deliveriesQuery(db: Db) {
  return db.withSchema(S).table("deliveries as d").join("events as e", "e.id", "d.event_id")
    .select("d.*", "e.event", "e.body");
}

export async function listDeliveries(db: Db, subscriptionId: number, page: PageQuery, status?: DeliveryStatus) {
  const query = deliveriesQuery(db).where("d.subscription_id", subscriptionId);
  if (status) query.where("d.status", status);
  return fetchPage<DeliveryRow & Record<string, unknown>>(query, page, "d.id", (r) => r.id, BIGINT_ID_MAX);
}

export async function findDelivery(db: Db, subscriptionId: number, id: number): Promise<DeliveryRow | undefined> {
  return deliveriesQuery(db).where({ "d.id": id, "d.subscription_id": subscriptionId }).first();
}

/** The attempts of these deliveries, oldest first, by delivery id. */
export async function attemptsOf(db: Db, deliveryIds: number[]): Promise<Map<number, AttemptRow[]>> {
  const byDelivery = new Map<number, AttemptRow[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return byDelivery;
  const rows = (await db.withSchema(S).table("attempts").whereIn("delivery_id", deliveryIds).orderBy("id")) as AttemptRow[];
  for (const row of rows) byDelivery.get(row.delivery_id)?.push(row);
  return byDelivery;
}

/**
 * Schedules a delivery again, whatever its status, with a fresh retry schedule. If a dispatcher
 * is sending it right now, it stays held until that claim expires, so it is never sent twice at
 * once; the running attempt is still recorded but no longer decides the delivery's status.
 */
export async function scheduleAgain(db: Db, subscriptionId: number, id: number): Promise<boolean> {
  const updated = await db.withSchema(S).table("deliveries").where({ id, subscription_id: subscriptionId }).update({
    status: "pending",
    attempt_count: 0,
    next_attempt_at: db.raw("CASE WHEN claim_token IS NOT NULL AND next_attempt_at > now() THEN next_attempt_at ELSE now() END"),
    claim_token: null,
    updated_at: db.fn.now(),
  });
  return updated > 0;
}

// ---- cancelling what a client may no longer receive ---------------------------------------

/** What is cancelled is kept in the log, with `cancelled` status, and never sent. */
const CANCELLED = { status: "cancelled", next_attempt_at: null, claim_token: null } as const;

/**
 * Cancels the queued (pending) deliveries of this client's subscriptions that its audience no
 * longer hears (webhooks.events.ts `Audience`, the same rule as fan-out). Returns how many.
 * One already being sent is cancelled too; its attempt is still recorded.
 */
export async function cancelQueuedDeliveries(db: Db, clientId: number, audience: { events: string[]; everyClientEvents: string[] }): Promise<number> {
  const unheard = db.withSchema(S).table("deliveries as d")
    .join("subscriptions as s", "s.id", "d.subscription_id")
    .join("events as e", "e.id", "d.event_id")
    .where("s.client_id", clientId).andWhere("d.status", "pending")
    .whereNot((q) => q.whereIn("e.event", audience.events)
      .andWhere((who) => who.whereRaw("e.owner_client_id = s.client_id").orWhereIn("e.event", audience.everyClientEvents)))
    .select("d.id");
  return db.withSchema(S).table("deliveries").whereIn("id", unheard).andWhere("status", "pending")
    .update({ ...CANCELLED, updated_at: db.fn.now() });
}

/** Cancels deliveries this dispatcher claimed and must not send; a claim that moved on is left alone. */
export async function cancelClaims(db: Db, claims: { id: number; claim_token: string }[]): Promise<void> {
  if (claims.length === 0) return;
  await db.withSchema(S).table("deliveries").whereIn("claim_token", claims.map((c) => c.claim_token))
    .update({ ...CANCELLED, updated_at: db.fn.now() });
}

// ---- dispatching ---------------------------------------------------------------------------

/** What the dispatcher still allows an endpoint: `perEndpoint` slots unless listed in `limits`. */
export interface EndpointAllowance {
  perEndpoint: number;
  limits: readonly { endpoint: string; free: number }[];
}

/**
 * An endpoint is the origin of a subscription URL (stored normalised by the URL parser, so
 * always with a path and without credentials): every path and every subscription to one server
 * share its slots, so subscribing more URLs on a hanging server gains no more of them.
 */
const ENDPOINT_OF_URL = `substring(s.url from '^[^:]+://[^/]+')`;

/**
 * Claims up to `limit` due deliveries in one statement: each is held for `leaseMs` (its due
 * time moves past the attempt) under a new claim token, and the statement commits before any
 * request is sent, so no transaction stays open during HTTP. Concurrent dispatchers skip each
 * other's rows (SKIP LOCKED), and a claimed row is no longer due for anyone until the lease
 * ends; if its dispatcher dies, the lease ends and another one sends it.
 *
 * Fair between endpoints: each endpoint gets no more rows than it has free slots, and the rows
 * are taken in turns (every endpoint's oldest due delivery, then every endpoint's second...), so
 * one endpoint's backlog never fills the batch. Per subscription, an index range scan reads at
 * most that endpoint's free slots of due rows (deliveries_due_by_subscription); endpoints with
 * no free slot are not read at all.
 */
export async function claimDue(db: Knex, limit: number, leaseMs: number, allowance: EndpointAllowance): Promise<ClaimedDelivery[]> {
  const result = await db.raw(
    `WITH endpoints AS (
       SELECT s.id AS subscription_id, ${ENDPOINT_OF_URL} AS endpoint, coalesce(l.free, ?) AS free
         FROM ??.subscriptions s
         LEFT JOIN jsonb_to_recordset(?::jsonb) AS l(endpoint text, free int) ON l.endpoint = ${ENDPOINT_OF_URL}
     ), candidates AS (
       SELECT d.id, d.next_attempt_at, e.endpoint, e.free,
              row_number() OVER (PARTITION BY e.endpoint ORDER BY d.next_attempt_at, d.id) AS turn
         FROM endpoints e
         CROSS JOIN LATERAL (
           SELECT id, next_attempt_at FROM ??.deliveries
            WHERE subscription_id = e.subscription_id AND status = 'pending' AND next_attempt_at <= now()
            ORDER BY next_attempt_at
            LIMIT e.free
         ) d
        WHERE e.free > 0
     ), fair AS (
       SELECT id FROM candidates WHERE turn <= free ORDER BY turn, next_attempt_at LIMIT ?
     ), due AS (
       -- Checked again once locked: another dispatcher may have claimed it since.
       SELECT id FROM ??.deliveries
        WHERE id IN (SELECT id FROM fair) AND status = 'pending' AND next_attempt_at <= now()
        FOR UPDATE SKIP LOCKED
     ), claimed AS (
       UPDATE ??.deliveries d
          SET next_attempt_at = now() + ? * interval '1 millisecond', claim_token = gen_random_uuid(), updated_at = now()
         FROM due WHERE d.id = due.id
       RETURNING d.id, d.claim_token, d.webhook_id, d.attempt_count, d.subscription_id, d.event_id
     )
     SELECT c.id, c.claim_token, c.webhook_id, c.attempt_count, e.event, e.body, e.request_id, s.url, s.key, s.secret, s.client_id, e.owner_client_id,
            ${ENDPOINT_OF_URL} AS endpoint
       FROM claimed c
       JOIN ??.subscriptions s ON s.id = c.subscription_id
       JOIN ??.events e ON e.id = c.event_id`,
    [allowance.perEndpoint, S, JSON.stringify(allowance.limits), S, limit, S, S, leaseMs, S, S],
  );
  return (result as { rows: ClaimedDelivery[] }).rows;
}

export interface AttemptRecord {
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryUpdate {
  status: DeliveryStatus;
  /** Milliseconds from now until the next attempt; null when none is scheduled. */
  retryInMs: number | null;
}

/**
 * Records one attempt and, while the claim still holds, the delivery's new state. The attempt
 * is kept even when the delivery was redelivered meanwhile; it is dropped with the delivery
 * when the subscription was deleted.
 */
export async function recordAttempt(db: Knex, claim: ClaimedDelivery, attempt: AttemptRecord, next: DeliveryUpdate): Promise<void> {
  // One statement, so atomic on its own: a round trip per attempt instead of four
  // (BEGIN, UPDATE, INSERT, COMMIT) at the dispatcher's busiest.
  await db.raw(
    `WITH updated AS (
       UPDATE ??.deliveries
          SET status = ?, attempt_count = ?, claim_token = NULL, updated_at = now(),
              next_attempt_at = CASE WHEN ?::bigint IS NULL THEN NULL ELSE now() + ?::bigint * interval '1 millisecond' END
        WHERE id = ? AND claim_token = ?
     )
     INSERT INTO ??.attempts (delivery_id, attempted_at, status_code, error, duration_ms)
     SELECT id, ?, ?, ?, ? FROM ??.deliveries WHERE id = ?`,
    [
      S, next.status, claim.attempt_count + 1, next.retryInMs, next.retryInMs, claim.id, claim.claim_token,
      S, attempt.attemptedAt, attempt.statusCode, attempt.error, attempt.durationMs, S, claim.id,
    ],
  );
}
