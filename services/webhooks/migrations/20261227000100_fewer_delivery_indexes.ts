import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * Three of the indexes every delivery row is written into go (issue 23: the deliveries' indexes
 * were 73 % of what the soak's database grew by, and each is one more insertion per delivery):
 *
 * - `deliveries_subscription_id_id_index` (subscription_id, id): its last reader was the
 *   recovery's walk by id; the recovery now walks its window in (created_at, id) order
 *   (`recoveries.after_created_at`), on `deliveries_by_subscription_created`, which also serves
 *   every other look-up by subscription (the cascade of a deleted subscription, revocations).
 * - `deliveries_by_subscription_status_created` keeps only what is not `succeeded`: it is read for
 *   `?status=`, whose point is to find a rare status among the successes; a search for
 *   `succeeded`, most of every subscription's history, reads `deliveries_by_subscription_created`
 *   and passes over the few others.
 * - `deliveries_settled` (updated_at) of what is not pending: read once an hour by retention,
 *   which now finds what it prunes subscription by subscription on
 *   `deliveries_by_subscription_updated` (the stats' index).
 *
 * A recovery under way keeps its place: its cursor's time is that of the delivery it stopped after.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("recoveries", (t) => {
    t.timestamp("after_created_at", { useTz: true });
  });
  await knex.raw(
    `UPDATE ??.recoveries r SET after_created_at = d.created_at
       FROM ??.deliveries d WHERE d.id = r.after_delivery_id AND r.status <> 'done'`,
    [SCHEMA, SCHEMA],
  );
  await knex.raw(`DROP INDEX ??.deliveries_subscription_id_id_index`, [SCHEMA]);
  await knex.raw(`DROP INDEX ??.deliveries_settled`, [SCHEMA]);
  await knex.raw(`DROP INDEX ??.deliveries_by_subscription_status_created`, [SCHEMA]);
  await knex.raw(
    `CREATE INDEX deliveries_by_subscription_status_created ON ??.deliveries (subscription_id, status, created_at, id)
      WHERE status <> 'succeeded'`,
    [SCHEMA],
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX ??.deliveries_by_subscription_status_created`, [SCHEMA]);
  await knex.raw(
    `CREATE INDEX deliveries_by_subscription_status_created ON ??.deliveries (subscription_id, status, created_at, id)`,
    [SCHEMA],
  );
  await knex.raw(`CREATE INDEX deliveries_settled ON ??.deliveries (updated_at) WHERE status <> 'pending'`, [SCHEMA]);
  await knex.raw(`CREATE INDEX deliveries_subscription_id_id_index ON ??.deliveries (subscription_id, id)`, [SCHEMA]);
  await knex.schema.withSchema(SCHEMA).alterTable("recoveries", (t) => {
    t.dropColumn("after_created_at");
  });
}
