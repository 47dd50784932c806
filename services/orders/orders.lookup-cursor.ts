/**
 * The cursor of a page of orders. Ordered by id (no time range asked), it is the house's own
 * (shared/http/paging.ts), so the Link URLs written before lookups existed still work. Ordered by
 * a time (createdSince / createdUntil / updatedSince), it carries that time to the microsecond,
 * as PostgreSQL holds it, and the id that breaks ties: a millisecond would skip or repeat orders.
 */
import { InvalidInputError } from "../../shared/errors";
import { decodeCursor, encodeCursor } from "../../shared/http/paging";
import { parseId } from "../../shared/http/params";

export type TimeKey = "created" | "updated";

export type OrdersCursor = { by: "id"; id: number } | { by: TimeKey; at: string; id: number };

/** A UTC timestamp as the query writes it (orders.lookups.repository.ts `cursorAt`). */
const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export const NOT_OURS = "This cursor is not one the API returned.";

export function encodeOrdersCursor(cursor: OrdersCursor): string {
  if (cursor.by === "id") return encodeCursor(cursor.id);
  return Buffer.from(`${cursor.by}:${cursor.at}:${cursor.id}`).toString("base64url");
}

/** The cursor a text is, or null unless it is exactly what encodeOrdersCursor wrote. */
export function parseOrdersCursor(text: string): OrdersCursor | null {
  const match = /^(created|updated):(.+):([^:]+)$/s.exec(Buffer.from(text, "base64url").toString("utf8"));
  if (!match) {
    try {
      return { by: "id", id: decodeCursor(text) };
    } catch {
      return null;
    }
  }
  const id = parseId(match[3]);
  if (id === null || !AT.test(match[2]) || Number.isNaN(Date.parse(match[2]))) return null;
  const cursor: OrdersCursor = { by: match[1] as TimeKey, at: match[2], id };
  // base64url decoding skips stray characters and padding: only our own spelling is accepted.
  return encodeOrdersCursor(cursor) === text ? cursor : null;
}

/** The cursor, which must be of the order the page is in (the Link URL keeps the query that chose it). */
export function ordersCursorFor(text: string, by: OrdersCursor["by"]): OrdersCursor {
  const cursor = parseOrdersCursor(text);
  if (cursor === null || cursor.by !== by) throw InvalidInputError.field("cursor", NOT_OURS);
  return cursor;
}
