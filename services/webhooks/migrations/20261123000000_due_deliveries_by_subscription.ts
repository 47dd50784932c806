import type { Knex } from "knex";

/**
 * The fair claim (webhooks.deliveries.repository.ts `claimDue`) reads each subscription's oldest due
 * deliveries, at most its endpoint's free slots: one index range scan per subscription. It
 * replaces the index on `next_attempt_at` alone, which nothing reads any more and which every
 * attempt would still have to update.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX deliveries_due_by_subscription ON webhooks.deliveries (subscription_id, next_attempt_at) WHERE status = 'pending'`,
  );
  await knex.raw(`DROP INDEX webhooks.deliveries_due`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending'`);
  await knex.raw(`DROP INDEX webhooks.deliveries_due_by_subscription`);
}
