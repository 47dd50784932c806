/**
 * A `timestamptz` column as text that keeps the microseconds PostgreSQL stores (ISO 8601, UTC).
 * A keyset cursor over a time column must come back exact: read as a JavaScript `Date` it loses
 * the microseconds, and the next page then skips or repeats the rows of that millisecond. Bound
 * back as `?::timestamptz`.
 */
export function exactTimestamp(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}
