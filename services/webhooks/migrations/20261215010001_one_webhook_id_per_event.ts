import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * The `webhook-id` is one per event now (webhooks.message-id.ts): every subscription's delivery of
 * an event carries the same, so it is no longer unique per delivery. `?webhookId=` searches still
 * read an index on it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE ??.deliveries DROP CONSTRAINT deliveries_webhook_id_unique`, [SCHEMA]);
  await knex.raw(`CREATE INDEX deliveries_webhook_id ON ??.deliveries (webhook_id)`, [SCHEMA]);
}

/** Back to one id per delivery: the second and later deliveries of an event get a random one again. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX ??.deliveries_webhook_id`, [SCHEMA]);
  await knex.raw(
    `UPDATE ??.deliveries d SET webhook_id = 'msg_' || replace(gen_random_uuid()::text, '-', '')
      WHERE EXISTS (SELECT 1 FROM ??.deliveries o WHERE o.webhook_id = d.webhook_id AND o.id < d.id)`,
    [SCHEMA, SCHEMA],
  );
  await knex.raw(`ALTER TABLE ??.deliveries ADD CONSTRAINT deliveries_webhook_id_unique UNIQUE (webhook_id)`, [SCHEMA]);
}
