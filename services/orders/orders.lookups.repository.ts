/**
 * The SQL of GET /api/v1/orders: lookups and keyset pages. Without a time range the page is in id
 * order, as it always was; with one it is in the order of that time (then id), so that each page
 * is read off one index (migrations/20261210000000_order_lookups.ts) however large the table.
 */
import type { Db } from "../../shared/database/db";
import { exactTimestamp } from "../../shared/database/exact-timestamp";
import { DEFAULT_LIMIT } from "../../shared/http/paging";
import { encodeOrdersCursor, ordersCursorFor, type OrdersCursor, type TimeKey } from "./orders.lookup-cursor";
import type { OrderStatus } from "./orders.params";
import type { OrderRow, Visibility } from "./orders.repository";

export interface OrdersLookup {
  limit?: number;
  cursor?: string;
  status?: OrderStatus;
  externalId?: string;
  externalReference?: string;
  code?: string;
  createdSince?: string;
  createdUntil?: string;
  updatedSince?: string;
  order?: "asc" | "desc";
}

const TIME_COLUMNS: Record<TimeKey, "created_at" | "updated_at"> = { created: "created_at", updated: "updated_at" };

/** What the page is ordered by: the change time when asked for changes, else the creation time when asked for a range of it. */
function orderingOf(lookup: OrdersLookup): OrdersCursor["by"] {
  if (lookup.updatedSince) return "updated";
  return lookup.createdSince || lookup.createdUntil ? "created" : "id";
}

type LookedUpRow = OrderRow & { cursor_at: string | null };

export async function lookUpOrders(
  db: Db,
  v: Visibility,
  lookup: OrdersLookup,
): Promise<{ rows: OrderRow[]; nextCursor: string | null }> {
  const by = orderingOf(lookup);
  const direction = lookup.order ?? "asc";
  const column = by === "id" ? null : TIME_COLUMNS[by];
  const q = db.withSchema("orders").table("orders").select("*");
  q.select(db.raw(column ? `${exactTimestamp(column)} AS cursor_at` : "NULL AS cursor_at"));
  if (!v.all) q.where("client_id", v.clientId);
  if (lookup.status) q.where("status", lookup.status);
  if (lookup.externalId) q.where("external_id", lookup.externalId);
  if (lookup.externalReference) q.where("external_reference", lookup.externalReference);
  if (lookup.code) q.where("code", lookup.code);
  if (lookup.createdSince) q.where("created_at", ">=", lookup.createdSince);
  if (lookup.createdUntil) q.where("created_at", "<", lookup.createdUntil);
  if (lookup.updatedSince) q.where("updated_at", ">=", lookup.updatedSince);
  const after = direction === "asc" ? ">" : "<";
  if (lookup.cursor) {
    const cursor = ordersCursorFor(lookup.cursor, by);
    if (cursor.by === "id") q.where("id", after, cursor.id);
    else q.whereRaw(`(${column}, id) ${after} (?::timestamptz, ?)`, [cursor.at, cursor.id]);
  }
  if (column) q.orderBy(column, direction);
  const limit = lookup.limit ?? DEFAULT_LIMIT;
  const rows = (await q.orderBy("id", direction).limit(limit + 1)) as LookedUpRow[];
  const pageRows = rows.slice(0, limit);
  const last = pageRows[pageRows.length - 1];
  return { rows: pageRows, nextCursor: rows.length > limit && last ? encodeOrdersCursor(cursorOf(last, by)) : null };
}

function cursorOf(row: LookedUpRow, by: OrdersCursor["by"]): OrdersCursor {
  return by === "id" || row.cursor_at === null ? { by: "id", id: row.id } : { by, at: row.cursor_at, id: row.id };
}
