import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * A delivery leaves its per-entity line when it settles, as it already did when redelivered or
 * recovered: its `sequence` is cleared (webhooks.ordering.ts). `deliveries_in_line` then holds
 * the unsettled deliveries in line by `sequence IS NOT NULL` alone, and the line probes need not
 * say `status = 'pending'` — which let the planner answer them from `deliveries_due_by_subscription`,
 * the pending deliveries of the subscription, walked whole on every probe whenever its statistics
 * said it was nearly empty (bench:webhooks' per_entity phase: 730 rows read per probe, 1,188 per
 * delivery; in production, a per_entity subscriber's backlog read again for each of its events).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE ??.deliveries SET sequence = NULL WHERE sequence IS NOT NULL AND status <> 'pending'`, [
    SCHEMA,
  ]);
  await knex.raw(`DROP INDEX ??.deliveries_in_line`, [SCHEMA]);
  await knex.raw(
    `CREATE INDEX deliveries_in_line ON ??.deliveries (subscription_id, entity_key, sequence) WHERE sequence IS NOT NULL`,
    [SCHEMA],
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX ??.deliveries_in_line`, [SCHEMA]);
  await knex.raw(
    `CREATE INDEX deliveries_in_line ON ??.deliveries (subscription_id, entity_key, sequence)
      WHERE status = 'pending' AND sequence IS NOT NULL`,
    [SCHEMA],
  );
}
