/**
 * A hot statement prepared once per connection instead of parsed and planned on every call.
 *
 * node-postgres sends a query without a name as an unnamed statement: PostgreSQL parses,
 * analyses and plans it again each time. For the delivery path's long statements (the fan-out,
 * the claim, the outcome batches) the planning alone took longer than the execution
 * (pg_stat_statements with track_planning: 1.8 ms of planning per fan-out call; bench/README.md,
 * issue 23, "prepared once"). A named statement is parsed once per connection, and PostgreSQL
 * keeps its plan once a generic one is as good as the custom ones (`plan_cache_mode = auto`).
 *
 * The name is taken from the statement's own text (as knex compiles it, identifiers included),
 * so two texts never share a name — node-postgres refuses a name reused for another text on a
 * connection — and a statement whose text varies (an optional clause) is one prepared statement
 * per variant: keep the variants few (a list bound as one array, not as one parameter each).
 * PGlite (the embedded mode) ignores the name.
 *
 * Only for a statement whose result names its columns (no `*`, no `RETURNING *`): PostgreSQL
 * plans a prepared statement again after a migration changes a table it reads, but refuses to
 * run it once the columns it returns have changed ("cached plan must not change result type"),
 * so a rolling deployment's new column would break the old processes' next call.
 */
import { createHash } from "node:crypto";
import type { Knex } from "knex";

/** The name node-postgres prepares this text under. */
export function statementName(sql: string): string {
  return `s_${createHash("sha1").update(sql).digest("base64url")}`;
}

/** `query`, to be run as a statement prepared under a name of its text's. */
export function prepared<T extends Knex.Raw | Knex.QueryBuilder>(query: T): T {
  return query.options({ name: statementName(query.toSQL().sql) }) as T;
}
