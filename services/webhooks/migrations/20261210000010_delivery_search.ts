import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * Delivery search (webhooks.delivery-search.ts): every search walks one subscription's
 * deliveries in (created_at, id) order, either way, from a cursor or a `since`/`until` bound,
 * and stops after a page, so each filter has an index that reads only the page:
 *
 * - `deliveries_by_subscription_created`: no filter, a time window, the subscription's own event.
 * - `deliveries_by_subscription_status_created`: `?status=` (a rare status among a million
 *   successes is read directly, not filtered out of them).
 * - `deliveries_tests_by_subscription_created`: `?event=webhook_test`, a few among a million; a
 *   test delivery is known by its event id (webhooks.test-event.ts `subscriptionEventId`).
 *
 * `?webhookId=` reads the unique index on `webhook_id` that every delivery already has.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX deliveries_by_subscription_created ON ??.deliveries (subscription_id, created_at, id)`, [
    SCHEMA,
  ]);
  await knex.raw(
    `CREATE INDEX deliveries_by_subscription_status_created ON ??.deliveries (subscription_id, status, created_at, id)`,
    [SCHEMA],
  );
  await knex.raw(
    `CREATE INDEX deliveries_tests_by_subscription_created ON ??.deliveries (subscription_id, created_at, id)
      WHERE starts_with(event_id, 'webhook_test-')`,
    [SCHEMA],
  );
}

export async function down(knex: Knex): Promise<void> {
  for (const index of [
    "deliveries_tests_by_subscription_created",
    "deliveries_by_subscription_status_created",
    "deliveries_by_subscription_created",
  ])
    await knex.raw(`DROP INDEX ??.??`, [SCHEMA, index]);
}
