/**
 * SQL of the `subscriptions` table: a client's subscriptions (created, read, deleted, their
 * secrets rotated, enabled and disabled), and which of them an event may reach. Takes a
 * transaction or the pool (`Db`).
 */
import type { Db } from "../../shared/database/db";
import type { DomainEvent, EventName } from "../../shared/messaging/events";
import { fetchPage, type PageQuery } from "../../shared/http/paging";
import type { SecretBox } from "../../shared/security/secret-box";
import type { Ordering } from "./webhooks.params";

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
  /** What its owner may change (PATCH /webhooks/{id}): a description, custom headers (names in clear, values sealed), a rate limit. */
  description: string | null;
  header_names: string[];
  headers: string | null;
  rate_limit: number | null;
  /** Per-entity order of its deliveries (webhooks.ordering.ts). */
  ordering: Ordering;
}

export type SubscriptionStatus = "active" | "disabled";

/** An Ed25519 key pair for a subscription (webhooks.signing.ts), or null for HMAC only. */
export type SigningKeys = { privateKey: string; publicKey: string } | null;

/** `box` seals the key, the secret and the private key (the service's, from its settings). */
export async function insertSubscription(
  db: Db,
  s: {
    clientId: number;
    event: EventName;
    url: string;
    key: string;
    secret: string;
    signing: SigningKeys;
    ordering: Ordering;
  },
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
      ordering: s.ordering,
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
  return db
    .withSchema(S)
    .table("subscriptions")
    .where({ client_id: clientId, event, url })
    .first<SubscriptionRow | undefined>();
}

export async function findSubscription(db: Db, clientId: number, id: number): Promise<SubscriptionRow | undefined> {
  return db
    .withSchema(S)
    .table("subscriptions")
    .where({ id, client_id: clientId })
    .first<SubscriptionRow | undefined>();
}

export async function listSubscriptions(db: Db, clientId: number, page: PageQuery) {
  const query = db.withSchema(S).table("subscriptions").where({ client_id: clientId }).select("*");
  return fetchPage<SubscriptionRow & Record<string, unknown>>(query, page, "id", (r) => r.id);
}

/**
 * Deletes the subscription with its deliveries (their foreign key cascades) and their attempts
 * (which have no foreign key: migration 20261227000000), in one statement; false when there was none.
 */
export async function deleteSubscription(db: Db, clientId: number, id: number): Promise<boolean> {
  // Raw: knex-pglite answers `.delete()` with its whole response instead of the row count.
  const result = await db.raw<{ rows: unknown[] }>(
    `WITH gone AS (
       DELETE FROM ??.subscriptions WHERE id = ? AND client_id = ? RETURNING id
     ), gone_attempts AS (
       DELETE FROM ??.attempts a USING ??.deliveries d
        WHERE a.delivery_id = d.id AND d.subscription_id IN (SELECT id FROM gone)
     )
     SELECT id FROM gone`,
    [S, id, clientId, S, S],
  );
  return result.rows.length > 0;
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

/** What PATCH /webhooks/{id} changes; a field left out stays as it is. */
export interface SubscriptionChanges {
  url?: string;
  description?: string | null;
  headers?: { names: string[]; sealed: string | null };
  rateLimit?: number | null;
  ordering?: Ordering;
}

/** The subscription, locked until the transaction ends: its changes are read, merged and written without losing another's. */
export async function lockSubscription(trx: Db, clientId: number, id: number): Promise<SubscriptionRow | undefined> {
  return trx
    .withSchema(S)
    .table("subscriptions")
    .where({ id, client_id: clientId })
    .forNoKeyUpdate()
    .first<SubscriptionRow | undefined>();
}

/** Applies the owner's changes; undefined when this client has no subscription with this id. */
export async function updateSubscription(
  db: Db,
  clientId: number,
  id: number,
  changes: SubscriptionChanges,
): Promise<SubscriptionRow | undefined> {
  const [row] = (await db
    .withSchema(S)
    .table("subscriptions")
    .where({ id, client_id: clientId })
    .update({
      ...(changes.url !== undefined ? { url: changes.url } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.headers !== undefined
        ? { header_names: changes.headers.names, headers: changes.headers.sealed }
        : {}),
      ...(changes.rateLimit !== undefined ? { rate_limit: changes.rateLimit } : {}),
      ...(changes.ordering !== undefined ? { ordering: changes.ordering } : {}),
    })
    .returning("*")) as SubscriptionRow[];
  return row;
}

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

// ---- what fan-out and dispatching read of a subscription -----------------------------------

/**
 * An endpoint is the origin of a subscription URL (stored normalised by the URL parser, so
 * always with a path and without credentials): every path and every subscription to one server
 * share its slots, so subscribing more URLs on a hanging server gains no more of them.
 */
export const ENDPOINT_OF_URL = `substring(s.url from '^[^:]+://[^/]+')`;

/** A replaced key or secret of subscription `s`, only while its rotation's overlap lasts. */
export const OVERLAPPING = (column: string) => `CASE WHEN s.previous_until > now() THEN s.${column} END AS ${column}`;

/** A subscription that may receive an event, and the endpoint (URL origin) it is sent to. */
export interface CandidateSubscription {
  id: number;
  client_id: number;
  endpoint: string;
  ordering: Ordering;
}

/**
 * The subscriptions that may receive this event: to its event name and created before the
 * event happened (an event replayed later reaches only those that existed then). Whose client
 * hears it is decided from the current grants (webhooks.audience.ts `hears`). Timestamps compare
 * at the millisecond, the precision of `occurredAt`.
 */
export async function candidateSubscriptions(db: Db, e: DomainEvent): Promise<CandidateSubscription[]> {
  return db
    .withSchema(S)
    .from("subscriptions as s")
    .where({ event: e.event, status: "active" })
    .andWhereRaw("date_trunc('milliseconds', created_at) <= ?", [e.occurredAt])
    .select<CandidateSubscription[]>("id", "client_id", "ordering", db.raw(`${ENDPOINT_OF_URL} AS endpoint`));
}

/** A subscription to an event name, with its creation time in ms since the epoch (truncated as above). */
export interface ListeningSubscription extends CandidateSubscription {
  created_ms: number;
}

/** Every active subscription to this event name: what webhooks.listeners.ts keeps per process. */
/** The event names that at least one active subscription listens to. */
export async function listenedEventNames(db: Db): Promise<EventName[]> {
  const rows = await db
    .withSchema(S)
    .from("subscriptions")
    .where({ status: "active" })
    .distinct<{ event: EventName }[]>("event");
  return rows.map((r) => r.event);
}

export async function listeningSubscriptions(db: Db, event: EventName): Promise<ListeningSubscription[]> {
  return db
    .withSchema(S)
    .from("subscriptions as s")
    .where({ event, status: "active" })
    .select<ListeningSubscription[]>(
      "id",
      "client_id",
      "ordering",
      db.raw(`${ENDPOINT_OF_URL} AS endpoint`),
      db.raw(`(extract(epoch FROM date_trunc('milliseconds', created_at)) * 1000)::float8 AS created_ms`),
    );
}
