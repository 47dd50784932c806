/**
 * Keyset paging shared by every list: `?limit=` (1–500, default 50) and an opaque `?cursor=`.
 * A list action returns a `Page`; the gateway turns it into a JSON array body and a
 * `Link: <...>; rel="next"` header, so every list behaves the same way.
 */
import type { Knex } from "knex";
import { InvalidInputError } from "../errors";
import { BIGINT_ID_MAX, INT_ID_MAX, optional, parseId, queryInteger } from "./params";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;
/** Half of NATS's default 1 MB message limit: room for moleculer's envelope around a page. */
export const MAX_PAGE_BYTES = 512 * 1024;

/** fastest-validator rules for the paging query parameters; spread into a list action's params. */
export const pageParams = {
  limit: {
    ...optional(queryInteger(1, MAX_LIMIT)),
    jsonSchema: { type: "integer", format: "int32", minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  },
  cursor: optional({
    type: "string",
    min: 1,
    max: 100,
    // Checked here so that a forged cursor is a 422 naming `cursor` before any query runs.
    custom: (value: unknown, errors: { type: string; actual: unknown; message?: string }[]) => {
      if (typeof value === "string" && cursorId(value, BIGINT_ID_MAX) === null)
        errors.push({ type: "cursor", actual: value, message: NOT_OURS });
      return value;
    },
    jsonSchemaAlso: {
      pattern: "^[A-Za-z0-9_-]+$",
      description: 'Opaque: the `cursor` of a `Link: rel="next"` URL, as given.',
    },
  }),
};

export interface PageQuery {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  $page: true;
  items: T[];
  nextCursor: string | null;
  /** The query parameter the next page's URL carries the cursor in: `cursor` unless said (the events feed's `after`). */
  cursorParam?: string;
}

export function isPage(value: unknown): value is Page<unknown> {
  return typeof value === "object" && value !== null && (value as { $page?: unknown }).$page === true;
}

export function encodeCursor(lastId: number): string {
  return Buffer.from(`id:${lastId}`).toString("base64url");
}

const NOT_OURS = "This cursor is not one the API returned.";

/** The id a cursor carries, or null unless it is exactly what encodeCursor makes of an id ≤ `max`. */
function cursorId(cursor: string, max: number): number | null {
  const match = /^id:(.*)$/s.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  const id = match ? parseId(match[1], max) : null;
  // base64url decoding skips stray characters and padding: only our own spelling is accepted.
  return id !== null && encodeCursor(id) === cursor ? id : null;
}

/** The id after which a page starts; `max` is the largest id of the listed column. */
export function decodeCursor(cursor: string, max = INT_ID_MAX): number {
  const id = cursorId(cursor, max);
  if (id === null) throw InvalidInputError.field("cursor", NOT_OURS);
  return id;
}

/**
 * Runs `query` (already filtered) as one page ordered by `idColumn`, fetching one extra row
 * to know whether a next page exists.
 */
export async function fetchPage<Row extends Record<string, unknown>>(
  query: Knex.QueryBuilder,
  page: PageQuery,
  idColumn: string,
  idOf: (row: Row) => number,
  maxId = INT_ID_MAX,
): Promise<{ rows: Row[]; nextCursor: string | null }> {
  const limit = page.limit ?? DEFAULT_LIMIT;
  if (page.cursor) query.where(idColumn, ">", decodeCursor(page.cursor, maxId));
  const rows = (await query.orderBy(idColumn, "asc").limit(limit + 1)) as Row[];
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { rows: pageRows, nextCursor: hasMore && last ? encodeCursor(idOf(last)) : null };
}

export function toPage<T>(items: T[], nextCursor: string | null): Page<T> {
  return { $page: true, items, nextCursor };
}

/**
 * A page that also stays under `maxBytes` of JSON: items are kept in order while they fit (the
 * first always is), and when some are left out the next page starts after the last one kept.
 * For lists whose items are large (webhook deliveries carry their bodies): a page must fit in one
 * transporter message (NATS: 1 MB).
 */
export function toSizeBoundedPage<T>(
  items: T[],
  nextCursor: string | null,
  idOf: (item: T) => number,
  maxBytes: number,
): Page<T> {
  const kept = withinBytes(items, maxBytes);
  if (kept.length === items.length) return toPage(items, nextCursor);
  return toPage(kept, encodeCursor(idOf(kept[kept.length - 1])));
}

/** The first items, in order, whose JSON array stays under `maxBytes` (the first always). */
export function withinBytes<T>(items: T[], maxBytes: number): T[] {
  let bytes = 1; // "[", then each item with its "," or the closing "]": exactly JSON.stringify(kept items)
  let kept = 0;
  for (const item of items) {
    bytes += Buffer.byteLength(JSON.stringify(item)) + 1;
    if (kept > 0 && bytes > maxBytes) break;
    kept++;
  }
  return kept === items.length ? items : items.slice(0, kept);
}
