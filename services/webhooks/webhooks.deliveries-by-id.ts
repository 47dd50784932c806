/**
 * How a statement looks deliveries up by id: through the primary key, whatever the statistics say.
 *
 * The deliveries have partial indexes (`status = 'pending'`: deliveries_due and
 * deliveries_due_by_subscription; `status <> 'succeeded'`: deliveries_by_subscription_status_created;
 * `sequence IS NOT NULL`: deliveries_in_line). A statement that says `id = ANY(…)` and, of the same
 * rows, something a partial index's predicate follows from (`status = 'failed'` implies
 * `status <> 'succeeded'`) lets the planner read that whole index and filter it by id instead —
 * which it does whenever statistics taken before the backlog say the index is nearly empty, as
 * after an ANALYZE of a table whose deliveries were all unordered, or had all succeeded:
 * `releaseIfFirstInLine` walked all 12,464 deliveries in line for 10 ids (20 ms a call), and
 * bench:webhooks' per_entity phase read 790 rows per delivery instead of 21.
 *
 * So such a statement reads its ids in `deliveriesByIds`, a MATERIALIZED CTE the planner cannot
 * push the other conditions into, and says them of the CTE. An UPDATE, which must re-check the
 * row it locks should a concurrent transaction have changed it, says them of the updated row
 * only with IS [NOT] DISTINCT FROM, from which no index predicate is proved.
 */

/** A CTE `alias` of the deliveries whose ids are the statement's next parameter (an array), with `columns`. */
export function deliveriesByIds(alias: string, columns: string): string {
  return `${alias} AS MATERIALIZED (SELECT ${columns} FROM webhooks.deliveries WHERE id = ANY(?::bigint[]))`;
}
