/**
 * SQL of the `events` and `deliveries` tables: an event stored once with one delivery per
 * subscription (fan-out, a test event), the dispatcher's claims, and a subscription's
 * deliveries as its owner sees them, sends again or has cancelled. The attempts of each
 * delivery are in webhooks.attempts.repository.ts.
 */
import { prepared } from "../../shared/database/prepared-statement";
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { EVENTS, type DeliveredEventName, type DomainEvent } from "../../shared/messaging/events";
import { currentTraceparent } from "../../shared/observability/tracing";
import type { DeliveryStatus } from "./webhooks.params";
import { webhookIdOf } from "./webhooks.message-id";
import {
  dueBehindEarlier,
  earlierUnsettled,
  linePlaceOf,
  NO_LINE_WAITS,
  undeferLines,
  type LeftLine,
  type LineRefs,
  type LineWaits,
} from "./webhooks.ordering";
import { ENDPOINT_OF_URL, OVERLAPPING } from "./webhooks.subscriptions.repository";

const S = "webhooks";

/** Why an attempt was made: its delivery's first (`scheduled`, or `test`), after a failure, or asked for again. */
export const ATTEMPT_TRIGGERS = ["scheduled", "retry", "redelivery", "recovery", "test"] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

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
  /** The subscription's custom headers, sealed (webhooks.custom-headers.ts); null when it has none. */
  headers: string | null;
  request_id: string | null;
  /** The trace of the fan-out that recorded the event: each attempt continues it (shared/observability/tracing.ts). */
  traceparent: string | null;
  /** Who subscribed, and whose entity the event is about: the dispatcher re-checks the grants. */
  client_id: number;
  owner_client_id: number;
  /** Where it goes, as the dispatcher counts its slots: the URL's origin (scheme, host, port). */
  endpoint: string;
  subscription_id: number;
  /** Why this attempt is made (the delivery's `next_trigger`; null there is `scheduled`). */
  trigger: AttemptTrigger;
  /** In a per-entity line (webhooks.ordering.ts): settling it may release the next one. */
  in_line?: boolean;
  /**
   * Handed over by the fan-out (`DirectClaims`): the version of the grants it decided on
   * (webhooks.grants.ts), so that an outcome written after they changed is re-checked
   * (webhooks.late-changes.ts).
   */
  grants_version?: number;
  /**
   * Present while the delivery is sent before it is stored (`DirectClaims.sendFirst`): its row
   * does not exist yet, and is written once, with its first attempt's outcome
   * (webhooks.attempts.repository.ts `recordFirstAttempts`), or claimed if that attempt is slow
   * (`storeClaimed`). Its id is already taken from the table's sequence.
   */
  unstored?: UnstoredDelivery;
}

/** What storing a delivery that was sent first needs besides its claim. */
export interface UnstoredDelivery {
  event_id: string;
  /** When the fan-out made it: its `created_at`, however late the row is written. */
  created_at: string;
}

// ---- storing an event's deliveries ---------------------------------------------------------

/** Deliveries the fan-out stores already claimed, for its own dispatcher to send at once. */
export interface DirectClaims {
  subscriptionIds: readonly number[];
  leaseMs: number;
  /**
   * Those deliveries that need no order (not in a per-entity line) and were never stored before
   * are not stored now: they are returned `unstored`, to be sent first and written once with
   * their outcome. The caller holds the event (unacknowledged in its channel) until they are
   * written, so a crash sends them again rather than lose them.
   */
  sendFirst?: boolean;
  /** The version of the grants the fan-out decided on (webhooks.grants.ts), carried by each delivery handed over. */
  grantsVersion?: number;
}

export interface StoredDeliveries {
  /** New deliveries, claimed or not. */
  created: number;
  /**
   * The new deliveries stored claimed (those of `DirectClaims`' subscriptions whose endpoint is
   * not paused), and, with `sendFirst`, those of them returned `unstored` instead.
   */
  claimed: ClaimedDelivery[];
  /**
   * The new deliveries stored behind an unsettled earlier one of their line, waiting to be
   * released (webhooks.ordering.ts): once this statement is committed, `releaseIfFirstInLine`.
   */
  behind: number[];
}

/** In the fan-out's statement: the stored event's place (`place`) in the line of a target subscription (`s`). */
const LINE_OF_PLACE: LineRefs = {
  entityKey: "place.entity_key",
  sequence: "place.sequence",
  clientId: "s.client_id",
  url: "s.url",
};

/**
 * Stores the event once (the exact text every subscriber receives) and one pending delivery
 * per listed subscription that is still there and active, in one statement: no transaction
 * around it. A re-published event adds nothing (existing (event, subscription) pairs are kept);
 * an event no listed subscription is left for is not stored.
 *
 * The deliveries of `direct`'s subscriptions are stored claimed, exactly as `claimDue` would
 * leave them (a lease and a claim token), unless their endpoint is paused (Retry-After): their
 * dispatcher sends them without claiming them again, and if it dies their lease ends and anyone
 * sends them. With `direct.sendFirst`, those that need no order are not stored at all but
 * returned `unstored`, with their ids taken: sent first, written once with their outcome. The
 * others are due now, for whichever dispatcher claims them; a `per_entity` one once its hold has
 * passed, and behind an unsettled earlier one of its line as `waits` says (webhooks.ordering.ts).
 */
export async function insertEventDeliveries(
  db: Db,
  e: DomainEvent,
  body: string,
  subscriptionIds: number[],
  direct: DirectClaims = { subscriptionIds: [], leaseMs: 0 },
  waits: LineWaits = NO_LINE_WAITS,
): Promise<StoredDeliveries> {
  if (subscriptionIds.length === 0) return { created: 0, claimed: [], behind: [] };
  const traceparent = currentTraceparent() ?? null;
  const place = linePlaceOf(e);
  const { rows } = await prepared(
    db.raw<{
      rows: (Omit<ClaimedDelivery, "claim_token" | "trigger" | "unstored"> & {
        claim_token: string | null;
        unstored: boolean;
        behind: boolean;
      })[];
    }>(
      `WITH place AS (
       SELECT ?::text AS entity_key, ?::bigint AS sequence,
              least(?::timestamptz, now()) + ? * interval '1 millisecond' AS held_until, ?::bigint AS behind_ms
     ), targets AS (
       SELECT s.id, s.url, s.key, s.secret, s.signing_key, s.headers, s.client_id,
              ${OVERLAPPING("previous_key")}, ${OVERLAPPING("previous_secret")}, ${OVERLAPPING("previous_signing_key")},
              ${ENDPOINT_OF_URL} AS endpoint,
              -- In line (webhooks.ordering.ts): due once held, stored claimed only with nothing before it.
              s.ordering = 'per_entity' AND place.sequence IS NOT NULL AS in_line,
              greatest(place.held_until, behind.until) AS held_until, behind.until AS behind_until,
              s.id = ANY(?::int[]) AND NOT EXISTS (SELECT 1 FROM ??.endpoint_pauses p WHERE p.endpoint = ${ENDPOINT_OF_URL} AND p.until > now())
                AND (s.ordering <> 'per_entity' OR place.sequence IS NULL
                     OR (place.held_until <= now() AND NOT ${earlierUnsettled(LINE_OF_PLACE)})) AS direct
         FROM ??.subscriptions s CROSS JOIN place
         -- OFFSET 0: evaluated once, not pulled up into each of the two columns that use it.
         CROSS JOIN LATERAL (
           SELECT CASE WHEN s.ordering = 'per_entity' AND place.sequence IS NOT NULL
                       THEN ${dueBehindEarlier(LINE_OF_PLACE, "place.behind_ms")} END AS until OFFSET 0) behind
        WHERE s.id = ANY(?::int[]) AND s.status = 'active'
     ), chosen AS (
       -- Sent first, stored with its outcome: direct, in no line, and not stored already (a
       -- re-published event adds nothing, as below).
       SELECT t.*, (?::boolean AND t.direct AND NOT t.in_line
                    AND NOT EXISTS (SELECT 1 FROM ??.deliveries d WHERE d.event_id = ? AND d.subscription_id = t.id)) AS first
         FROM targets t
     ), stored AS (
       INSERT INTO ??.events (id, event, owner_client_id, entity, entity_id, occurred_at, body, request_id, traceparent)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM targets)
       ON CONFLICT (id) DO NOTHING
     ), inserted AS (
       INSERT INTO ??.deliveries (subscription_id, event_id, webhook_id, next_attempt_at, claim_token, entity_key, sequence)
       SELECT t.id, ?, ?,
              CASE WHEN t.direct THEN now() + ? * interval '1 millisecond' WHEN t.in_line THEN greatest(now(), t.held_until) ELSE now() END,
              CASE WHEN t.direct THEN gen_random_uuid() END,
              CASE WHEN t.in_line THEN place.entity_key END, CASE WHEN t.in_line THEN place.sequence END
         FROM chosen t CROSS JOIN place
        WHERE NOT t.first
       ON CONFLICT (event_id, subscription_id) DO NOTHING
       RETURNING id, subscription_id, webhook_id, claim_token, attempt_count, sequence IS NOT NULL AS in_line
     )
     SELECT i.id, i.subscription_id, i.webhook_id, i.claim_token, i.attempt_count, i.in_line, false AS unstored,
            t.behind_until IS NOT NULL AS behind,
            t.url, t.key, t.secret, t.signing_key, t.headers, t.client_id,
            t.previous_key, t.previous_secret, t.previous_signing_key, t.endpoint
       FROM inserted i JOIN chosen t ON t.id = i.subscription_id
     UNION ALL
     SELECT nextval(pg_get_serial_sequence('${S}.deliveries', 'id')), t.id, ?, gen_random_uuid(), 0, false, true AS unstored,
            false AS behind,
            t.url, t.key, t.secret, t.signing_key, t.headers, t.client_id,
            t.previous_key, t.previous_secret, t.previous_signing_key, t.endpoint
       FROM chosen t WHERE t.first`,
      [
        place?.entityKey ?? null,
        place?.sequence ?? null,
        e.occurredAt,
        waits.holdMs,
        waits.behindMs,
        [...direct.subscriptionIds],
        S,
        S,
        subscriptionIds,
        direct.sendFirst === true,
        S,
        e.id,
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
        webhookIdOf(e),
        direct.leaseMs,
        webhookIdOf(e),
      ],
    ),
  );
  const claimed: ClaimedDelivery[] = [];
  const behind: number[] = [];
  const createdAt = new Date().toISOString();
  for (const { unstored, behind: isBehind, ...row } of rows) {
    if (isBehind) behind.push(Number(row.id));
    if (row.claim_token === null) continue;
    claimed.push({
      ...row,
      ...(unstored ? { unstored: { event_id: e.id, created_at: createdAt } } : {}),
      ...(direct.grantsVersion === undefined ? {} : { grants_version: direct.grantsVersion }),
      claim_token: row.claim_token,
      trigger: "scheduled",
      event: e.event,
      body,
      request_id: e.requestId ?? null,
      traceparent,
      owner_client_id: e.ownerClientId,
    });
  }
  return { created: rows.length, claimed, behind };
}

/**
 * Stores a delivery that was sent first and whose attempt is taking long: claimed under a lease,
 * as the fan-out would have stored it, so that from now on it is in the log and, if this
 * process dies, sent again once the lease ends. Its outcome then updates the row as any claim's.
 * False when nothing was stored: it was stored already (another replica got the event again),
 * or its subscription is gone.
 */
export async function storeClaimed(
  db: Db,
  d: ClaimedDelivery & { unstored: UnstoredDelivery },
  leaseMs: number,
): Promise<boolean> {
  const { rowCount } = await db.raw<{ rowCount: number }>(
    `INSERT INTO ??.deliveries (id, subscription_id, event_id, webhook_id, next_attempt_at, claim_token, created_at)
     SELECT ?, ?, ?, ?, now() + ? * interval '1 millisecond', ?, ?
      WHERE EXISTS (SELECT 1 FROM ??.subscriptions s WHERE s.id = ?)
     ON CONFLICT (event_id, subscription_id) DO NOTHING`,
    [
      S,
      d.id,
      d.subscription_id,
      d.unstored.event_id,
      d.webhook_id,
      leaseMs,
      d.claim_token,
      d.unstored.created_at,
      S,
      d.subscription_id,
    ],
  );
  return rowCount === 1;
}

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
    const [row] = await trx
      .withSchema(S)
      .table("deliveries")
      .insert({
        subscription_id: e.subscription.id,
        event_id: e.id,
        webhook_id: trx.raw("'msg_' || replace(gen_random_uuid()::text, '-', '')"),
        next_attempt_at: trx.fn.now(),
        next_trigger: "test",
      })
      .returning<{ id: number | string }[]>("id");
    return Number(row.id);
  });
}

// ---- claiming due deliveries ---------------------------------------------------------------

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
  // Planned on each call, not prepared (shared/database/prepared-statement.ts): its best plan
  // depends on its parameters (the batch's LIMIT, the endpoints' free slots), and prepared it
  // cost PostgreSQL 4.3–4.6 times the CPU per per-entity delivery (bench/README.md, issue 23,
  // "prepared once").
  const result = await db.raw<{ rows: ClaimedDelivery[] }>(
    `WITH endpoints AS (
       SELECT s.id AS subscription_id, ${ENDPOINT_OF_URL} AS endpoint, coalesce(l.free, ?) AS free,
              s.client_id, s.url, s.ordering = 'per_entity' AS per_entity
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
           SELECT id, next_attempt_at FROM ??.deliveries q
            WHERE subscription_id = e.subscription_id AND status = 'pending' AND next_attempt_at <= now()
              -- In line (webhooks.ordering.ts): not while an earlier one of its line is unsettled.
              AND (q.sequence IS NULL OR NOT e.per_entity
                   OR NOT ${earlierUnsettled({ entityKey: "q.entity_key", sequence: "q.sequence", clientId: "e.client_id", url: "e.url" })})
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
       RETURNING d.id, d.claim_token, d.webhook_id, d.attempt_count, d.subscription_id, d.event_id, d.next_trigger, d.sequence IS NOT NULL AS in_line
     )
     SELECT c.subscription_id, c.id, c.claim_token, c.webhook_id, c.attempt_count, coalesce(c.next_trigger, 'scheduled') AS trigger, c.in_line, e.event, e.body, e.request_id, e.traceparent, s.url, s.key, s.secret, s.signing_key, s.headers, s.client_id, e.owner_client_id,
            ${OVERLAPPING("previous_key")}, ${OVERLAPPING("previous_secret")}, ${OVERLAPPING("previous_signing_key")},
            ${ENDPOINT_OF_URL} AS endpoint
       FROM claimed c
       JOIN ??.subscriptions s ON s.id = c.subscription_id
       JOIN ??.events e ON e.id = c.event_id`,
    [allowance.perEndpoint, S, JSON.stringify(allowance.limits), S, S, limit, S, leaseMs, S, S],
  );
  return result.rows;
}

// ---- deliveries as subscribers see them ----------------------------------------------------

function deliveriesQuery(db: Db) {
  return db
    .withSchema(S)
    .table("deliveries as d")
    .join("events as e", "e.id", "d.event_id")
    .select("d.*", "e.event", "e.body");
}

export async function findDelivery(db: Db, subscriptionId: number, id: number): Promise<DeliveryRow | undefined> {
  return deliveriesQuery(db)
    .where({ "d.id": id, "d.subscription_id": subscriptionId })
    .first<DeliveryRow | undefined>();
}

/**
 * Schedules a delivery again, whatever its status, with a fresh retry schedule. If a dispatcher
 * is sending it right now, it stays held until that claim expires, so it is never sent twice at
 * once; the running attempt is still recorded but no longer decides the delivery's status. The
 * caller holds the subscription active (webhooks.active-subscription.ts).
 */
export async function scheduleAgain(db: Db, subscriptionId: number, id: number): Promise<boolean> {
  const updated: LeftLine[] = await db
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
      next_trigger: "redelivery",
      // Sent again on request, out of its line (webhooks.ordering.ts): it holds up no newer one.
      sequence: null,
      updated_at: db.fn.now(),
    })
    .returning(["subscription_id", "entity_key"]);
  await undeferLines(db, updated);
  return updated.length > 0;
}

// ---- cancelling and failing what must not be sent ------------------------------------------

/** What is cancelled is kept in the log, with `cancelled` status, and never sent (a recovery may queue it again). */
/** Settled, it leaves its per-entity line too (webhooks.ordering.ts). */
const CANCELLED = {
  status: "cancelled",
  next_attempt_at: null,
  claim_token: null,
  next_trigger: null,
  sequence: null,
} as const;

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
    .whereNot((q) => {
      q.whereIn("e.event", audience.events).andWhere((who) => {
        who.whereRaw("e.owner_client_id = s.client_id").orWhereIn("e.event", audience.everyClientEvents);
      });
    })
    .select("d.id");
  const cancelled: LeftLine[] = await db
    .withSchema(S)
    .table("deliveries")
    .whereIn("id", unheard)
    .andWhere("status", "pending")
    .update({ ...CANCELLED, updated_at: db.fn.now() })
    .returning(["subscription_id", "entity_key"]);
  await undeferLines(db, cancelled);
  return cancelled.length;
}

/**
 * Cancels deliveries this dispatcher claimed and must not send; a claim that moved on is left
 * alone. The later deliveries of their lines waiting behind them are due at once.
 */
export async function cancelClaims(db: Db, claims: { id: number; claim_token: string }[]): Promise<void> {
  if (claims.length === 0) return;
  const cancelled: LeftLine[] = await db
    .withSchema(S)
    .table("deliveries")
    .whereIn(
      "claim_token",
      claims.map((c) => c.claim_token),
    )
    .update({ ...CANCELLED, updated_at: db.fn.now() })
    .returning(["subscription_id", "entity_key"]);
  await undeferLines(db, cancelled);
}

/**
 * A disabled subscription's queued deliveries are cancelled: kept in the log, never left pending
 * (nothing would send them), queued again by a recovery once it is enabled. A claim being sent
 * no longer decides them.
 */
export async function cancelPendingDeliveries(db: Db, subscriptionId: number): Promise<number> {
  const cancelled: LeftLine[] = await db
    .withSchema(S)
    .table("deliveries")
    .where({ subscription_id: subscriptionId, status: "pending" })
    .update({ ...CANCELLED, updated_at: db.fn.now() })
    .returning(["subscription_id", "entity_key"]);
  await undeferLines(db, cancelled);
  return cancelled.length;
}

/**
 * Of these deliveries, those still pending whose subscription is disabled are cancelled, as
 * disabling would have cancelled them had their rows been queued then (webhooks.late-changes.ts).
 * Reading the subscriptions FOR SHARE waits for a disabling under way, so either it sees these
 * rows or this sees it. Returns how many.
 */
export async function cancelPendingOfDisabled(
  db: Db,
  deliveries: readonly { id: number; subscription_id: number }[],
): Promise<number> {
  if (deliveries.length === 0) return 0;
  const subscriptionIds = [...new Set(deliveries.map((d) => d.subscription_id))];
  const cancelled: LeftLine[] = await db
    .with("locked", (q) =>
      q.withSchema(S).from("subscriptions").select("id", "status").whereIn("id", subscriptionIds).forShare(),
    )
    .withSchema(S)
    .table("deliveries")
    .whereIn(
      "id",
      deliveries.map((d) => d.id),
    )
    .andWhere("status", "pending")
    .whereIn("subscription_id", (q) => void q.from("locked").select("id").where("status", "disabled"))
    .update({ ...CANCELLED, updated_at: db.fn.now() })
    .returning(["subscription_id", "entity_key"]);
  await undeferLines(db, cancelled);
  return cancelled.length;
}
