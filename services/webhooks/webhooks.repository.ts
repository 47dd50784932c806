/**
 * The only file of the webhooks service that touches knex.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { EVENTS, type DeliveredEventName, type DomainEvent, type EventName } from "../../shared/messaging/events";
import { fetchPage, type PageQuery } from "../../shared/http/paging";
import type { SecretBox } from "../../shared/security/secret-box";
import { BIGINT_ID_MAX } from "../../shared/http/params";
import { currentTraceparent } from "../../shared/observability/tracing";
import type { DeliveryStatus } from "./webhooks.params";
import type { DeliveryUpdate } from "./webhooks.retry-policy";

const S = "webhooks";

export interface SubscriptionRow {
  id: number;
  client_id: number;
  event: EventName;
  url: string;
  /** Sealed at rest (shared/security/secret-box.ts); in clear only in what insertSubscription and rotateSecrets return. */
  key: string;
  secret: string;
  created_at: Date;
  rotated_at: Date | null;
  /** What the last rotation replaced (sealed), used beside the current values until `previous_until`. */
  previous_key: string | null;
  previous_secret: string | null;
  previous_signing_key: string | null;
  previous_until: Date | null;
  /** Ed25519 private key, sealed (PKCS#8 DER in base64), and its `whpk_` public key; null for HMAC only. */
  signing_key: string | null;
  public_key: string | null;
  /** Its delivery health (webhooks.subscription-health.ts). */
  status: SubscriptionStatus;
  disabled_at: Date | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_failure_status_code: number | null;
  last_failure_error: string | null;
}

export type SubscriptionStatus = "active" | "disabled";

export interface DeliveryRow {
  id: number;
  subscription_id: number;
  event_id: string;
  event: DeliveredEventName;
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
  event: DeliveredEventName;
  body: string;
  url: string;
  /** As stored, sealed: the sender opens them just before signing. */
  key: string;
  secret: string;
  signing_key: string | null;
  /** Sealed as well; null unless a rotation's overlap is still running. */
  previous_key: string | null;
  previous_secret: string | null;
  previous_signing_key: string | null;
  request_id: string | null;
  /** The trace of the fan-out that recorded the event: each attempt continues it (shared/observability/tracing.ts). */
  traceparent: string | null;
  /** Who subscribed, and whose entity the event is about: the dispatcher re-checks the grants. */
  client_id: number;
  owner_client_id: number;
  /** Where it goes, as the dispatcher counts its slots: the URL's origin (scheme, host, port). */
  endpoint: string;
  subscription_id: number;
}

// ---- subscriptions -------------------------------------------------------------------------

/** An Ed25519 key pair for a subscription (webhooks.signing.ts), or null for HMAC only. */
export type SigningKeys = { privateKey: string; publicKey: string } | null;

/** `box` seals the key, the secret and the private key (the service's, from its settings). */
export async function insertSubscription(
  db: Db,
  s: { clientId: number; event: EventName; url: string; key: string; secret: string; signing: SigningKeys },
  box: SecretBox,
): Promise<SubscriptionRow | null> {
  const rows = (await db
    .withSchema(S)
    .table("subscriptions")
    .insert({
      client_id: s.clientId,
      event: s.event,
      url: s.url,
      key: box.seal(s.key),
      secret: box.seal(s.secret),
      signing_key: s.signing && box.seal(s.signing.privateKey),
      public_key: s.signing?.publicKey ?? null,
    })
    .onConflict(["client_id", "event", "url"])
    .ignore()
    .returning("*")) as SubscriptionRow[];
  return rows[0] ? { ...rows[0], key: s.key, secret: s.secret } : null;
}

export async function findSubscriptionByTarget(
  db: Db,
  clientId: number,
  event: EventName,
  url: string,
): Promise<SubscriptionRow | undefined> {
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
  const result = await db.raw(`DELETE FROM ??.subscriptions WHERE id = ? AND client_id = ? RETURNING id`, [
    S,
    id,
    clientId,
  ]);
  return (result as { rows: unknown[] }).rows.length > 0;
}

/**
 * Replaces the key, the secret and the key pair; the replaced ones keep signing beside them for
 * `overlapMs` (a second rotation within that time drops the oldest).
 */
export async function rotateSecrets(
  db: Db,
  clientId: number,
  id: number,
  next: { key: string; secret: string; signing: SigningKeys; overlapMs: number },
  box: SecretBox,
): Promise<SubscriptionRow | undefined> {
  // The right-hand sides read the row as it was before this update.
  const [row] = (await db
    .withSchema(S)
    .table("subscriptions")
    .where({ id, client_id: clientId })
    .update({
      previous_key: db.raw("??", ["key"]),
      previous_secret: db.raw("??", ["secret"]),
      previous_signing_key: db.raw("??", ["signing_key"]),
      previous_until: db.raw("now() + ? * interval '1 millisecond'", [next.overlapMs]),
      key: box.seal(next.key),
      secret: box.seal(next.secret),
      signing_key: next.signing && box.seal(next.signing.privateKey),
      public_key: next.signing?.publicKey ?? null,
      rotated_at: db.fn.now(),
    })
    .returning("*")) as SubscriptionRow[];
  return row && { ...row, key: next.key, secret: next.secret };
}

// ---- fan-out -------------------------------------------------------------------------------

/**
 * An endpoint is the origin of a subscription URL (stored normalised by the URL parser, so
 * always with a path and without credentials): every path and every subscription to one server
 * share its slots, so subscribing more URLs on a hanging server gains no more of them.
 */
const ENDPOINT_OF_URL = `substring(s.url from '^[^:]+://[^/]+')`;

/** A replaced key or secret of subscription `s`, only while its rotation's overlap lasts. */
const OVERLAPPING = (column: string) => `CASE WHEN s.previous_until > now() THEN s.${column} END AS ${column}`;

/** A subscription that may receive an event, and the endpoint (URL origin) it is sent to. */
export interface CandidateSubscription {
  id: number;
  client_id: number;
  endpoint: string;
}

/**
 * The subscriptions that may receive this event: to its event name and created before the
 * event happened (an event replayed later reaches only those that existed then). Whose client
 * hears it is decided from the current grants (webhooks.audience.ts `hears`). Timestamps compare
 * at the millisecond, the precision of `occurredAt`.
 */
export async function candidateSubscriptions(db: Db, e: DomainEvent): Promise<CandidateSubscription[]> {
  return (await db
    .withSchema(S)
    .from("subscriptions as s")
    .where({ event: e.event, status: "active" })
    .andWhereRaw("date_trunc('milliseconds', created_at) <= ?", [e.occurredAt])
    .select("id", "client_id", db.raw(`${ENDPOINT_OF_URL} AS endpoint`))) as CandidateSubscription[];
}

/** Deliveries the fan-out stores already claimed, for its own dispatcher to send at once. */
export interface DirectClaims {
  subscriptionIds: readonly number[];
  leaseMs: number;
}

export interface StoredDeliveries {
  /** New deliveries, claimed or not. */
  created: number;
  /** The new deliveries stored claimed (those of `DirectClaims`' subscriptions whose endpoint is not paused). */
  claimed: ClaimedDelivery[];
}

/**
 * Stores the event once (the exact text every subscriber receives) and one pending delivery
 * per listed subscription that is still there and active, in one statement: no transaction
 * around it. A re-published event adds nothing (existing (event, subscription) pairs are kept);
 * an event no listed subscription is left for is not stored.
 *
 * The deliveries of `direct`'s subscriptions are stored claimed, exactly as `claimDue` would
 * leave them (a lease and a claim token), unless their endpoint is paused (Retry-After): their
 * dispatcher sends them without claiming them again, and if it dies their lease ends and anyone
 * sends them. The others are due now, for whichever dispatcher claims them.
 */
export async function insertEventDeliveries(
  db: Db,
  e: DomainEvent,
  body: string,
  subscriptionIds: number[],
  direct: DirectClaims = { subscriptionIds: [], leaseMs: 0 },
): Promise<StoredDeliveries> {
  if (subscriptionIds.length === 0) return { created: 0, claimed: [] };
  const traceparent = currentTraceparent() ?? null;
  const { rows } = await db.raw<{ rows: (Omit<ClaimedDelivery, "claim_token"> & { claim_token: string | null })[] }>(
    `WITH targets AS (
       SELECT s.id, s.url, s.key, s.secret, s.signing_key, s.client_id,
              ${OVERLAPPING("previous_key")}, ${OVERLAPPING("previous_secret")}, ${OVERLAPPING("previous_signing_key")},
              ${ENDPOINT_OF_URL} AS endpoint,
              s.id = ANY(?::int[]) AND NOT EXISTS (SELECT 1 FROM ??.endpoint_pauses p WHERE p.endpoint = ${ENDPOINT_OF_URL} AND p.until > now()) AS direct
         FROM ??.subscriptions s WHERE s.id = ANY(?::int[]) AND s.status = 'active'
     ), stored AS (
       INSERT INTO ??.events (id, event, owner_client_id, entity, entity_id, occurred_at, body, request_id, traceparent)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM targets)
       ON CONFLICT (id) DO NOTHING
     ), inserted AS (
       INSERT INTO ??.deliveries (subscription_id, event_id, webhook_id, next_attempt_at, claim_token)
       SELECT t.id, ?, 'msg_' || replace(gen_random_uuid()::text, '-', ''),
              CASE WHEN t.direct THEN now() + ? * interval '1 millisecond' ELSE now() END,
              CASE WHEN t.direct THEN gen_random_uuid() END
         FROM targets t
       ON CONFLICT (event_id, subscription_id) DO NOTHING
       RETURNING id, subscription_id, webhook_id, claim_token, attempt_count
     )
     SELECT i.id, i.subscription_id, i.webhook_id, i.claim_token, i.attempt_count, t.url, t.key, t.secret, t.signing_key, t.client_id,
            t.previous_key, t.previous_secret, t.previous_signing_key, t.endpoint
       FROM inserted i JOIN targets t ON t.id = i.subscription_id`,
    [
      [...direct.subscriptionIds],
      S,
      S,
      subscriptionIds,
      S,
      e.id,
      e.event,
      e.ownerClientId,
      e.entity,
      e.entityId,
      e.occurredAt,
      body,
      e.requestId ?? null,
      traceparent,
      S,
      e.id,
      direct.leaseMs,
    ],
  );
  const claimed: ClaimedDelivery[] = [];
  for (const row of rows) {
    if (row.claim_token === null) continue;
    claimed.push({
      ...row,
      claim_token: row.claim_token,
      event: e.event as DeliveredEventName,
      body,
      request_id: e.requestId ?? null,
      traceparent,
      owner_client_id: e.ownerClientId,
    });
  }
  return { created: rows.length, claimed };
}

// ---- deliveries as subscribers see them ----------------------------------------------------

function deliveriesQuery(db: Db) {
  return db
    .withSchema(S)
    .table("deliveries as d")
    .join("events as e", "e.id", "d.event_id")
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
  const rows = (await db
    .withSchema(S)
    .table("attempts")
    .whereIn("delivery_id", deliveryIds)
    .orderBy("id")) as AttemptRow[];
  for (const row of rows) byDelivery.get(row.delivery_id)?.push(row);
  return byDelivery;
}

/**
 * Schedules a delivery again, whatever its status, with a fresh retry schedule. If a dispatcher
 * is sending it right now, it stays held until that claim expires, so it is never sent twice at
 * once; the running attempt is still recorded but no longer decides the delivery's status.
 */
export async function scheduleAgain(db: Db, subscriptionId: number, id: number): Promise<boolean> {
  const updated = await db
    .withSchema(S)
    .table("deliveries")
    .where({ id, subscription_id: subscriptionId })
    .update({
      status: "pending",
      attempt_count: 0,
      next_attempt_at: db.raw(
        "CASE WHEN claim_token IS NOT NULL AND next_attempt_at > now() THEN next_attempt_at ELSE now() END",
      ),
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
 * longer hears (webhooks.audience.ts `Audience`, the same rule as fan-out). Returns how many.
 * One already being sent is cancelled too; its attempt is still recorded.
 */
export async function cancelQueuedDeliveries(
  db: Db,
  clientId: number,
  audience: { events: string[]; everyClientEvents: string[] },
): Promise<number> {
  const unheard = db
    .withSchema(S)
    .table("deliveries as d")
    .join("subscriptions as s", "s.id", "d.subscription_id")
    .join("events as e", "e.id", "d.event_id")
    .where("s.client_id", clientId)
    .andWhere("d.status", "pending")
    // Subscription events (a test) depend on no grant but `webhooks`, which the dispatcher checks.
    .whereIn("e.event", EVENTS)
    .whereNot((q) =>
      q
        .whereIn("e.event", audience.events)
        .andWhere((who) =>
          who.whereRaw("e.owner_client_id = s.client_id").orWhereIn("e.event", audience.everyClientEvents),
        ),
    )
    .select("d.id");
  return db
    .withSchema(S)
    .table("deliveries")
    .whereIn("id", unheard)
    .andWhere("status", "pending")
    .update({ ...CANCELLED, updated_at: db.fn.now() });
}

/** Cancels deliveries this dispatcher claimed and must not send; a claim that moved on is left alone. */
export async function cancelClaims(db: Db, claims: { id: number; claim_token: string }[]): Promise<void> {
  if (claims.length === 0) return;
  await db
    .withSchema(S)
    .table("deliveries")
    .whereIn(
      "claim_token",
      claims.map((c) => c.claim_token),
    )
    .update({ ...CANCELLED, updated_at: db.fn.now() });
}

// ---- dispatching ---------------------------------------------------------------------------

/** What the dispatcher still allows an endpoint: `perEndpoint` slots unless listed in `limits`. */
export interface EndpointAllowance {
  perEndpoint: number;
  limits: readonly { endpoint: string; free: number }[];
}

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
 * most that endpoint's free slots of due rows (deliveries_due_by_subscription) and locks them as
 * it reads them (SKIP LOCKED), so the cost grows with the free slots, never with the backlog;
 * endpoints with no free slot are not read at all.
 */
export async function claimDue(
  db: Knex,
  limit: number,
  leaseMs: number,
  allowance: EndpointAllowance,
): Promise<ClaimedDelivery[]> {
  const result = await db.raw(
    `WITH endpoints AS (
       SELECT s.id AS subscription_id, ${ENDPOINT_OF_URL} AS endpoint, coalesce(l.free, ?) AS free
         FROM ??.subscriptions s
         LEFT JOIN jsonb_to_recordset(?::jsonb) AS l(endpoint text, free int) ON l.endpoint = ${ENDPOINT_OF_URL}
        -- A disabled subscription receives nothing; a paused endpoint (Retry-After) waits.
        WHERE s.status = 'active'
          AND NOT EXISTS (SELECT 1 FROM ??.endpoint_pauses p WHERE p.endpoint = ${ENDPOINT_OF_URL} AND p.until > now())
     ), candidates AS (
       SELECT d.id, d.next_attempt_at, e.endpoint, e.free,
              row_number() OVER (PARTITION BY e.endpoint ORDER BY d.next_attempt_at, d.id) AS turn
         FROM endpoints e
         CROSS JOIN LATERAL (
           SELECT id, next_attempt_at FROM ??.deliveries
            WHERE subscription_id = e.subscription_id AND status = 'pending' AND next_attempt_at <= now()
            ORDER BY next_attempt_at
            LIMIT e.free
            -- Locked as read, and re-checked once locked (another dispatcher may have claimed it
            -- since). A separate re-check by id (IN (SELECT …) or = ANY (ARRAY(…))) let the
            -- planner, which expects few pending rows, walk every due row of the backlog per
            -- claim: 233,525 join-filter rows, 246 ms of the claim at a backlog of 6,000.
            FOR UPDATE SKIP LOCKED
         ) d
        WHERE e.free > 0
     ), fair AS (
       SELECT id FROM candidates WHERE turn <= free ORDER BY turn, next_attempt_at LIMIT ?
     ), claimed AS (
       UPDATE ??.deliveries d
          SET next_attempt_at = now() + ? * interval '1 millisecond', claim_token = gen_random_uuid(), updated_at = now()
         FROM fair WHERE d.id = fair.id
       RETURNING d.id, d.claim_token, d.webhook_id, d.attempt_count, d.subscription_id, d.event_id
     )
     SELECT c.subscription_id, c.id, c.claim_token, c.webhook_id, c.attempt_count, e.event, e.body, e.request_id, e.traceparent, s.url, s.key, s.secret, s.signing_key, s.client_id, e.owner_client_id,
            ${OVERLAPPING("previous_key")}, ${OVERLAPPING("previous_secret")}, ${OVERLAPPING("previous_signing_key")},
            ${ENDPOINT_OF_URL} AS endpoint
       FROM claimed c
       JOIN ??.subscriptions s ON s.id = c.subscription_id
       JOIN ??.events e ON e.id = c.event_id`,
    [allowance.perEndpoint, S, JSON.stringify(allowance.limits), S, S, limit, S, leaseMs, S, S],
  );
  return (result as { rows: ClaimedDelivery[] }).rows;
}

export interface AttemptRecord {
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** One finished attempt of a claimed delivery, and the delivery's state after it. */
export interface RecordedAttempt {
  claim: Pick<ClaimedDelivery, "id" | "claim_token" | "attempt_count">;
  attempt: AttemptRecord;
  next: DeliveryUpdate;
}

/**
 * Records finished attempts, many in one statement (so atomic on its own, one transaction for
 * the lot): each attempt row, and, while its claim still holds, its delivery's new state. An
 * attempt is kept even when the delivery was redelivered meanwhile; it is dropped with the
 * delivery when the subscription was deleted.
 */
export async function recordAttempts(db: Knex, recorded: readonly RecordedAttempt[]): Promise<void> {
  if (recorded.length === 0) return;
  const rows = recorded.map(({ claim, attempt, next }) => ({
    id: claim.id,
    claim_token: claim.claim_token,
    status: next.status,
    attempt_count: claim.attempt_count + (next.spendsRetry === false ? 0 : 1),
    retry_in_ms: next.retryInMs,
    attempted_at: attempt.attemptedAt.toISOString(),
    status_code: attempt.statusCode,
    error: attempt.error,
    duration_ms: attempt.durationMs,
  }));
  await db.raw(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS i(id bigint, claim_token uuid, status text, attempt_count int, retry_in_ms bigint,
                                                      attempted_at timestamptz, status_code int, error text, duration_ms int)
     ), updated AS (
       UPDATE ??.deliveries d
          SET status = i.status, attempt_count = i.attempt_count, claim_token = NULL, updated_at = now(),
              next_attempt_at = CASE WHEN i.retry_in_ms IS NULL THEN NULL ELSE now() + i.retry_in_ms * interval '1 millisecond' END
         FROM input i
        WHERE d.id = i.id AND d.claim_token = i.claim_token
     )
     INSERT INTO ??.attempts (delivery_id, attempted_at, status_code, error, duration_ms)
     SELECT i.id, i.attempted_at, i.status_code, i.error, i.duration_ms
       FROM input i WHERE EXISTS (SELECT 1 FROM ??.deliveries d WHERE d.id = i.id)`,
    [JSON.stringify(rows), S, S, S],
  );
}

// ---- events about one subscription (a test) ------------------------------------------------

/** Records an event for one subscription only, with its pending delivery due now; returns the delivery's id. */
export async function insertSubscriptionEvent(
  db: Knex,
  e: {
    id: string;
    event: DeliveredEventName;
    subscription: { id: number; client_id: number };
    body: string;
    requestId: string | null;
    traceparent: string | null;
  },
): Promise<number> {
  return db.transaction(async (trx) => {
    await trx.withSchema(S).table("events").insert({
      id: e.id,
      event: e.event,
      owner_client_id: e.subscription.client_id,
      entity: "subscription",
      entity_id: e.subscription.id,
      occurred_at: trx.fn.now(),
      body: e.body,
      request_id: e.requestId,
      traceparent: e.traceparent,
    });
    const [row] = (await trx
      .withSchema(S)
      .table("deliveries")
      .insert({
        subscription_id: e.subscription.id,
        event_id: e.id,
        webhook_id: trx.raw("'msg_' || replace(gen_random_uuid()::text, '-', '')"),
        next_attempt_at: trx.fn.now(),
      })
      .returning("id")) as { id: number | string }[];
    return Number(row.id);
  });
}

// ---- recoveries ----------------------------------------------------------------------------

export type RecoveryStatus = "queued" | "running" | "done";

export interface RecoveryRow {
  id: number;
  subscription_id: number;
  since: Date;
  requested_until: Date | null;
  until: Date;
  all_deliveries: boolean;
  status: RecoveryStatus;
  claim_token: string | null;
  after_delivery_id: number;
  examined: number;
  queued: number;
  created_at: Date;
  finished_at: Date | null;
}

export interface RecoveryRequest {
  since: Date;
  until: Date | null;
  all: boolean;
}

/**
 * A new recovery, or the subscription's unfinished one (at most one: recoveries_one_active),
 * which the caller compares with what it asked.
 */
export async function createRecovery(
  db: Db,
  subscriptionId: number,
  r: RecoveryRequest,
): Promise<{ row: RecoveryRow; created: boolean }> {
  for (;;) {
    const inserted = await db.raw(
      `INSERT INTO ??.recoveries (subscription_id, since, requested_until, until, all_deliveries)
       VALUES (?, ?, ?::timestamptz, coalesce(?::timestamptz, now()), ?)
       ON CONFLICT (subscription_id) WHERE status <> 'done' DO NOTHING
       RETURNING *`,
      [S, subscriptionId, r.since, r.until, r.until, r.all],
    );
    const [row] = (inserted as { rows: RecoveryRow[] }).rows;
    if (row) return { row: normalRecovery(row), created: true };
    const active = await db
      .withSchema(S)
      .table("recoveries")
      .where({ subscription_id: subscriptionId })
      .whereNot("status", "done")
      .first();
    // It finished between the two statements: ask again.
    if (active) return { row: normalRecovery(active as RecoveryRow), created: false };
  }
}

export async function findRecovery(db: Db, subscriptionId: number, id: number): Promise<RecoveryRow | undefined> {
  const row = (await db.withSchema(S).table("recoveries").where({ id, subscription_id: subscriptionId }).first()) as
    RecoveryRow | undefined;
  return row && normalRecovery(row);
}

/** bigint columns come back as text from node-postgres. */
function normalRecovery(row: RecoveryRow): RecoveryRow {
  return { ...row, id: Number(row.id), after_delivery_id: Number(row.after_delivery_id) };
}

/**
 * Claims the oldest unfinished recovery nobody holds (never claimed, or its holder's lease
 * ended), for `leaseMs`: one replica works on it at a time.
 */
export async function claimRecovery(db: Knex, leaseMs: number): Promise<RecoveryRow | undefined> {
  const result = await db.raw(
    `UPDATE ??.recoveries r
        SET status = 'running', claim_token = gen_random_uuid(), claimed_until = now() + ? * interval '1 millisecond'
      WHERE r.id = (SELECT id FROM ??.recoveries
                     WHERE status <> 'done' AND (claimed_until IS NULL OR claimed_until < now())
                     ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING *`,
    [S, leaseMs, S],
  );
  const [row] = (result as { rows: RecoveryRow[] }).rows;
  return row && normalRecovery(row);
}

/**
 * Queues again the next `batch` deliveries of the recovery's window (those that did not succeed,
 * or all of them with `all_deliveries`; pending ones are on their way already) and extends the
 * lease, in one short transaction; marks the recovery done after the last. Returns how many were
 * queued, or null when the claim was lost (another replica took it over).
 */
export async function recoverNextBatch(
  db: Knex,
  claim: RecoveryRow,
  batch: number,
  leaseMs: number,
): Promise<{ queued: number; done: boolean } | null> {
  return db.transaction(async (trx) => {
    const held = (await trx
      .withSchema(S)
      .table("recoveries")
      .where({ id: claim.id, claim_token: claim.claim_token })
      .forUpdate()
      .first()) as RecoveryRow | undefined;
    if (!held) return null;
    const ids = (
      (await trx
        .withSchema(S)
        .table("deliveries")
        .where("subscription_id", held.subscription_id)
        .andWhere("id", ">", held.after_delivery_id)
        .andWhere("created_at", ">=", held.since)
        .andWhere("created_at", "<", held.until)
        .orderBy("id")
        .limit(batch)
        .select("id")) as { id: number | string }[]
    ).map((r) => Number(r.id));
    const again = trx.withSchema(S).table("deliveries").whereIn("id", ids).whereNot("status", "pending");
    if (!held.all_deliveries) again.whereNot("status", "succeeded");
    const queued =
      ids.length === 0
        ? 0
        : (
            await again
              .update({
                status: "pending",
                attempt_count: 0,
                next_attempt_at: trx.fn.now(),
                claim_token: null,
                updated_at: trx.fn.now(),
              })
              .returning("id")
          ).length;
    const done = ids.length < batch;
    await trx
      .withSchema(S)
      .table("recoveries")
      .where({ id: held.id })
      .update({
        after_delivery_id: ids.length > 0 ? ids[ids.length - 1] : held.after_delivery_id,
        examined: trx.raw("examined + ?", [ids.length]),
        queued: trx.raw("queued + ?", [queued]),
        ...(done
          ? { status: "done", finished_at: trx.fn.now(), claim_token: null, claimed_until: null }
          : { claimed_until: trx.raw("now() + ? * interval '1 millisecond'", [leaseMs]) }),
      });
    return { queued, done };
  });
}

// ---- endpoint health (webhooks.subscription-health.ts) --------------------------------------------------

/** Disables an active subscription; undefined when it was not active. */
export async function markDisabled(db: Db, id: number, reason: string): Promise<SubscriptionRow | undefined> {
  const [row] = (await db
    .withSchema(S)
    .table("subscriptions")
    .where({ id, status: "active" })
    .update({ status: "disabled", disabled_at: db.fn.now(), disabled_reason: reason })
    .returning("*")) as SubscriptionRow[];
  return row;
}

/** Enables a subscription of this client again, with a clean slate; undefined when it has none with this id. */
export async function markEnabled(db: Db, clientId: number, id: number): Promise<SubscriptionRow | undefined> {
  const [row] = (await db
    .withSchema(S)
    .table("subscriptions")
    .where({ id, client_id: clientId })
    .update({ status: "active", disabled_at: null, disabled_reason: null, failing_since: null })
    .returning("*")) as SubscriptionRow[];
  return row;
}

/** A disabled subscription's queued deliveries fail (a claim being sent no longer decides them). */
export async function failPendingDeliveries(db: Db, subscriptionId: number): Promise<void> {
  await db
    .withSchema(S)
    .table("deliveries")
    .where({ subscription_id: subscriptionId, status: "pending" })
    .update({ status: "failed", next_attempt_at: null, claim_token: null, updated_at: db.fn.now() });
}

/** The endpoint gets no attempt before `waitMs` from now (a later pause already there stands). */
export async function pauseEndpoint(db: Db, endpoint: string, waitMs: number): Promise<void> {
  await db.raw(
    `INSERT INTO ??.endpoint_pauses AS p (endpoint, until) VALUES (?, now() + ?::bigint * interval '1 millisecond')
     ON CONFLICT (endpoint) DO UPDATE SET until = greatest(p.until, excluded.until)`,
    [S, endpoint, waitMs],
  );
}

/** What a batch of attempts says about one subscription (webhooks.subscription-health.ts `summarize`). */
export interface SubscriptionHealthNote {
  subscriptionId: number;
  /** The latest successful attempt's time, if any succeeded. */
  lastSuccessAt: Date | null;
  /** The latest failed attempt, if any failed. */
  lastFailure: { at: Date; statusCode: number | null; error: string | null } | null;
  /** The first failure after the batch's last success; null when the latest attempt succeeded. */
  failingFrom: Date | null;
}

/**
 * Keeps each subscription's latest figures after a batch of attempts, in one statement: last
 * success, last failure with its status code, and since when every attempt failed. Says, per
 * subscription, whether that run of failures has lasted `disableAfterMs`. The rows are locked
 * in id order first, so two dispatchers' batches never wait on each other in a circle, and
 * FOR NO KEY UPDATE (what the UPDATE itself takes), not FOR UPDATE: that one conflicts with the
 * key-share locks a fan-out's delivery inserts take on their subscriptions (the foreign key),
 * and the bench saw both deadlock.
 */
export async function noteAttemptsHealth(
  db: Db,
  notes: readonly SubscriptionHealthNote[],
  disableAfterMs: number,
): Promise<{ subscriptionId: number; status: SubscriptionStatus; failingTooLong: boolean }[]> {
  if (notes.length === 0) return [];
  const rows = notes.map((n) => ({
    id: n.subscriptionId,
    last_success_at: n.lastSuccessAt?.toISOString() ?? null,
    last_failure_at: n.lastFailure?.at.toISOString() ?? null,
    status_code: n.lastFailure?.statusCode ?? null,
    error: n.lastFailure?.error ?? null,
    failing_from: n.failingFrom?.toISOString() ?? null,
  }));
  const { rows: noted } = await db.raw<{
    rows: { id: number; status: SubscriptionStatus; failing_too_long: boolean }[];
  }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb)
         AS i(id int, last_success_at timestamptz, last_failure_at timestamptz, status_code int, error text, failing_from timestamptz)
     ), locked AS (
       SELECT s.id FROM ??.subscriptions s WHERE s.id IN (SELECT id FROM input) ORDER BY s.id FOR NO KEY UPDATE
     )
     UPDATE ??.subscriptions s
        SET last_success_at = coalesce(i.last_success_at, s.last_success_at),
            last_failure_at = coalesce(i.last_failure_at, s.last_failure_at),
            last_failure_status_code = CASE WHEN i.last_failure_at IS NULL THEN s.last_failure_status_code ELSE i.status_code END,
            last_failure_error = CASE WHEN i.last_failure_at IS NULL THEN s.last_failure_error ELSE i.error END,
            failing_since = CASE WHEN i.failing_from IS NULL THEN NULL
                                 WHEN i.last_success_at IS NOT NULL THEN i.failing_from
                                 ELSE coalesce(s.failing_since, i.failing_from) END
       FROM input i
      WHERE s.id = i.id AND s.id IN (SELECT id FROM locked)
      RETURNING s.id, s.status, coalesce(s.failing_since <= now() - ?::bigint * interval '1 millisecond', false) AS failing_too_long`,
    [JSON.stringify(rows), S, S, disableAfterMs],
  );
  return noted.map((r) => ({ subscriptionId: r.id, status: r.status, failingTooLong: r.failing_too_long }));
}

export interface SubscriptionStatsRow {
  attempts: number;
  succeeded: number;
  p50_ms: number | null;
  p95_ms: number | null;
  max_ms: number | null;
  pending: number;
}

/**
 * A subscription's attempts over the last `windowMs` (count, successes, latency percentiles)
 * and its backlog. Only deliveries touched within the window can have attempts in it
 * (`updated_at` moves with every attempt), which bounds what is read.
 */
export async function subscriptionStats(
  db: Db,
  subscriptionId: number,
  windowMs: number,
): Promise<SubscriptionStatsRow> {
  const { rows } = await db.raw<{ rows: SubscriptionStatsRow[] }>(
    `WITH recent AS (
       SELECT a.status_code, a.duration_ms FROM ??.deliveries d JOIN ??.attempts a ON a.delivery_id = d.id
        WHERE d.subscription_id = ? AND d.updated_at >= now() - ?::bigint * interval '1 millisecond'
          AND a.attempted_at >= now() - ?::bigint * interval '1 millisecond'
     )
     SELECT count(*)::int AS attempts,
            count(*) FILTER (WHERE status_code BETWEEN 200 AND 299)::int AS succeeded,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50_ms,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95_ms,
            max(duration_ms) AS max_ms,
            (SELECT count(*)::int FROM ??.deliveries WHERE subscription_id = ? AND status = 'pending') AS pending
       FROM recent`,
    [S, S, subscriptionId, windowMs, windowMs, S, subscriptionId],
  );
  return rows[0];
}

/** Every subscription's state, the backlog, and how long the `worst` longest-failing ones have failed. */
export async function healthFigures(db: Db, worst: number) {
  const {
    rows: [states],
  } = await db.raw<{ rows: { healthy: number; failing: number; disabled: number }[] }>(
    `SELECT count(*) FILTER (WHERE status = 'active' AND failing_since IS NULL)::int AS healthy,
            count(*) FILTER (WHERE status = 'active' AND failing_since IS NOT NULL)::int AS failing,
            count(*) FILTER (WHERE status = 'disabled')::int AS disabled
       FROM ??.subscriptions`,
    [S],
  );
  const {
    rows: [backlog],
  } = await db.raw<{ rows: { pending: number; oldest_seconds: number | null }[] }>(
    `SELECT count(*)::int AS pending, extract(epoch FROM now() - min(created_at))::float8 AS oldest_seconds
       FROM ??.deliveries WHERE status = 'pending'`,
    [S],
  );
  const { rows: failing } = await db.raw<{ rows: { seconds: number }[] }>(
    `SELECT extract(epoch FROM now() - failing_since)::float8 AS seconds FROM ??.subscriptions
      WHERE status = 'active' AND failing_since IS NOT NULL ORDER BY failing_since LIMIT ?`,
    [S, worst],
  );
  return {
    subscriptions: states,
    pendingDeliveries: backlog.pending,
    oldestPendingAgeSeconds: Math.max(0, backlog.oldest_seconds ?? 0),
    worstFailingSeconds: failing.map((r) => r.seconds),
  };
}

// ---- retention (webhooks.retention.ts) -----------------------------------------------------

/** Rows one pruning statement removed, by table. */
export interface PrunedRows {
  deliveries: number;
  attempts: number;
}

/**
 * Deletes up to `limit` deliveries settled (not pending) more than `olderThanMs` ago, with
 * their attempts, in one statement. A failed delivery counts from its last attempt or
 * redelivery, so it stays the whole period for its owner to look into or recover.
 */
export async function pruneSettledDeliveries(db: Db, olderThanMs: number, limit: number): Promise<PrunedRows> {
  const { rows } = await db.raw<{ rows: PrunedRows[] }>(
    `WITH doomed AS (
       SELECT id FROM ??.deliveries
        WHERE status <> 'pending' AND updated_at < now() - ?::bigint * interval '1 millisecond'
        ORDER BY updated_at LIMIT ? FOR UPDATE SKIP LOCKED
     ), gone_attempts AS (
       DELETE FROM ??.attempts WHERE delivery_id IN (SELECT id FROM doomed) RETURNING 1
     ), gone AS (
       DELETE FROM ??.deliveries WHERE id IN (SELECT id FROM doomed) RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM gone) AS deliveries, (SELECT count(*)::int FROM gone_attempts) AS attempts`,
    [S, olderThanMs, limit, S, S],
  );
  return rows[0];
}

/** Deletes up to `limit` events older than `olderThanMs` that no delivery needs any more. */
export async function pruneUnusedEvents(db: Db, olderThanMs: number, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `WITH gone AS (
       DELETE FROM ??.events WHERE id IN (
         SELECT e.id FROM ??.events e
          WHERE e.received_at < now() - ?::bigint * interval '1 millisecond'
            AND NOT EXISTS (SELECT 1 FROM ??.deliveries d WHERE d.event_id = e.id)
          ORDER BY e.received_at LIMIT ?)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [S, S, olderThanMs, S, limit],
  );
  return rows[0]?.n ?? 0;
}
