import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * The series of `GET /webhooks/{id}/stats` (webhooks.stats.ts): a subscription's attempts over
 * the last 24 h or 7 days are found through the deliveries it touched in that time
 * (`updated_at` moves with every attempt), then each delivery's attempts in that time. Without
 * these, a busy subscription's week read every delivery it ever had. The attempts index on
 * (delivery_id, attempted_at) serves what the one on delivery_id alone did, which it replaces.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX deliveries_by_subscription_updated ON ??.deliveries (subscription_id, updated_at)`, [
    SCHEMA,
  ]);
  await knex.raw(`CREATE INDEX attempts_by_delivery_attempted ON ??.attempts (delivery_id, attempted_at)`, [SCHEMA]);
  await knex.raw(`DROP INDEX ??.attempts_delivery_id_index`, [SCHEMA]);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX attempts_delivery_id_index ON ??.attempts (delivery_id)`, [SCHEMA]);
  await knex.raw(`DROP INDEX ??.attempts_by_delivery_attempted`, [SCHEMA]);
  await knex.raw(`DROP INDEX ??.deliveries_by_subscription_updated`, [SCHEMA]);
}
