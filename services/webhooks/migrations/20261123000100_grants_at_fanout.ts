import type { Knex } from "knex";

/**
 * Who hears an event is decided at fan-out from the client's current grants
 * (webhooks.audience.ts), no longer copied into the subscription when it is made: `all_clients`
 * goes, since a copy outlives a lost `orders:manage`. Deliveries a client may no longer
 * receive become `cancelled`: kept in the log, never sent.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE webhooks.subscriptions DROP COLUMN all_clients`);
  await knex.raw(`ALTER TABLE webhooks.deliveries DROP CONSTRAINT deliveries_status_check`);
  await knex.raw(
    `ALTER TABLE webhooks.deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'failed', 'refused', 'cancelled'))`,
  );
}

/** Back to the copied decision (every subscription hears only its own client again) and no `cancelled`: those read as `failed`. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE webhooks.deliveries DROP CONSTRAINT deliveries_status_check`);
  await knex.raw(`UPDATE webhooks.deliveries SET status = 'failed' WHERE status = 'cancelled'`);
  await knex.raw(
    `ALTER TABLE webhooks.deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'failed', 'refused'))`,
  );
  await knex.raw(`ALTER TABLE webhooks.subscriptions ADD COLUMN all_clients boolean NOT NULL DEFAULT false`);
}
