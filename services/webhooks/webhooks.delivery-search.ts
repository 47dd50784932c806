/**
 * Delivery search (docs/webhooks.md, "Finding a delivery"): a client's deliveries, of one
 * subscription or of all of them, filtered by time window, event, status and webhook-id, in
 * (createdAt, id) order either way, a page at a time from an opaque cursor.
 *
 * Each subscription's deliveries are read by an index range scan in that order, at most a page
 * of them (migrations/20261210000010_delivery_search.ts says which index serves which filter),
 * and the pages of the caller's subscriptions are merged: the cost follows the page, never how
 * many deliveries a subscription has.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { exactTimestamp } from "../../shared/database/exact-timestamp";
import { InvalidInputError } from "../../shared/errors";
import { decodeCursor, DEFAULT_LIMIT } from "../../shared/http/paging";
import { BIGINT_ID_MAX } from "../../shared/http/params";
import { isSubscriptionEvent, SUBSCRIPTION_EVENT_NAMES, type DeliveredEventName } from "../../shared/messaging/events";
import type { DeliveryRow } from "./webhooks.deliveries.repository";
import type { DeliveryStatus, SearchOrder } from "./webhooks.params";
import { subscriptionEventIdPrefix } from "./webhooks.test-event";

const S = "webhooks";

export interface DeliverySearch {
  order: SearchOrder;
  since?: Date;
  until?: Date;
  event?: DeliveredEventName;
  status?: DeliveryStatus;
  webhookId?: string;
  limit?: number;
  cursor?: string;
}

/** A subscription searched, with the event it is subscribed to. */
export interface SearchedSubscription {
  id: number;
  event: string;
}

/** Every subscription of this client, for a search across them. */
export async function clientSubscriptions(db: Db, clientId: number): Promise<SearchedSubscription[]> {
  return db
    .withSchema(S)
    .table("subscriptions")
    .where({ client_id: clientId })
    .orderBy("id")
    .select<SearchedSubscription[]>("id", "event");
}

/**
 * Which deliveries of these subscriptions carry `event`: a subscription receives its own event,
 * and the events about itself (a test), known by their event id's prefix — the condition the
 * partial index of tests is built on, written the same way so the planner uses it.
 */
function eventScope(
  subscriptions: readonly SearchedSubscription[],
  event: DeliveredEventName | undefined,
): { subscriptions: readonly SearchedSubscription[]; condition: string | null } {
  const startsWith = (name: string) => `starts_with(d.event_id, '${subscriptionEventIdPrefix(name)}')`;
  if (event === undefined) return { subscriptions, condition: null };
  if (isSubscriptionEvent(event)) return { subscriptions, condition: startsWith(event) };
  return {
    subscriptions: subscriptions.filter((s) => s.event === event),
    condition: SUBSCRIPTION_EVENT_NAMES.map((name) => `NOT ${startsWith(name)}`).join(" AND "),
  };
}

/** Where the page after `cursor` starts: its delivery's exact (created_at, id), read as text so no precision is lost. */
async function cursorPosition(
  db: Db,
  subscriptionIds: readonly number[],
  cursor: string,
): Promise<{ at: string; id: number }> {
  const id = decodeCursor(cursor, BIGINT_ID_MAX);
  const { rows } = await db.raw<{ rows: { at: string }[] }>(
    `SELECT ${exactTimestamp("created_at")} AS at
       FROM ??.deliveries WHERE id = ? AND subscription_id = ANY(?::int[])`,
    [S, id, [...subscriptionIds]],
  );
  if (!rows[0]) {
    throw InvalidInputError.field(
      "cursor",
      "The delivery this cursor continues after is gone (pruned, or its subscription deleted): search again without `cursor`.",
    );
  }
  return { at: rows[0].at, id };
}

/**
 * One page of the search over `subscriptions` (the caller's, already checked), and the cursor of
 * the next when there is one. `cursorScope`: every subscription a cursor of the caller may point into.
 */
export async function searchDeliveries(
  db: Db,
  subscriptions: readonly SearchedSubscription[],
  search: DeliverySearch,
  cursorScope: readonly number[] = subscriptions.map((s) => s.id),
): Promise<{ rows: DeliveryRow[]; hasMore: boolean }> {
  const limit = search.limit ?? DEFAULT_LIMIT;
  const scope = eventScope(subscriptions, search.event);
  if (scope.subscriptions.length === 0) return { rows: [], hasMore: false };
  const after = search.cursor ? await cursorPosition(db, cursorScope, search.cursor) : null;

  const direction = search.order === "desc" ? "DESC" : "ASC";
  const conditions: string[] = [];
  const bindings: Knex.Value[] = [];
  const where = (condition: string, ...values: Knex.Value[]) => {
    conditions.push(condition);
    bindings.push(...values);
  };
  if (search.status) where("d.status = ?", search.status);
  if (search.since) where("d.created_at >= ?", search.since);
  if (search.until) where("d.created_at < ?", search.until);
  if (search.webhookId) where("d.webhook_id = ?", search.webhookId);
  if (scope.condition) where(scope.condition);
  if (after) where(`(d.created_at, d.id) ${direction === "ASC" ? ">" : "<"} (?::timestamptz, ?)`, after.at, after.id);

  const { rows } = await db.raw<{ rows: DeliveryRow[] }>(
    `SELECT d.*, e.event, e.body
       FROM unnest(?::int[]) AS s(id)
       CROSS JOIN LATERAL (
         SELECT d.* FROM ??.deliveries d
          WHERE d.subscription_id = s.id ${conditions.map((c) => `AND ${c}`).join(" ")}
          ORDER BY d.created_at ${direction}, d.id ${direction}
          LIMIT ?
       ) d
       JOIN ??.events e ON e.id = d.event_id
      ORDER BY d.created_at ${direction}, d.id ${direction}
      LIMIT ?`,
    [scope.subscriptions.map((s) => s.id), S, ...bindings, limit + 1, S, limit + 1],
  );
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}
