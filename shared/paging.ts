/**
 * Keyset paging shared by every list: `?limit=` (1–500, default 50) and an opaque `?cursor=`.
 * A list action returns a `Page`; the gateway turns it into a JSON array body and a
 * `Link: <...>; rel="next"` header, so every list behaves the same way.
 */
import type { Knex } from "knex";
import { InvalidInputError } from "./errors";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

/** fastest-validator rules for the paging query parameters; spread into a list action's params. */
export const pageParams = {
  limit: { type: "number", integer: true, min: 1, max: MAX_LIMIT, optional: true, convert: true },
  cursor: { type: "string", optional: true, max: 100 },
} as const;

export interface PageQuery {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  $page: true;
  items: T[];
  nextCursor: string | null;
}

export function isPage(value: unknown): value is Page<unknown> {
  return typeof value === "object" && value !== null && (value as { $page?: unknown }).$page === true;
}

export function encodeCursor(lastId: number): string {
  return Buffer.from(`id:${lastId}`).toString("base64url");
}

export function decodeCursor(cursor: string): number {
  const match = /^id:(\d{1,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw InvalidInputError.field("cursor", "This cursor is not one the API returned.");
  return Number(match[1]);
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
): Promise<{ rows: Row[]; nextCursor: string | null }> {
  const limit = page.limit ?? DEFAULT_LIMIT;
  if (page.cursor) query.where(idColumn, ">", decodeCursor(page.cursor));
  const rows = (await query.orderBy(idColumn, "asc").limit(limit + 1)) as Row[];
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { rows: pageRows, nextCursor: hasMore && last ? encodeCursor(idOf(last)) : null };
}

export function toPage<T>(items: T[], nextCursor: string | null): Page<T> {
  return { $page: true, items, nextCursor };
}
