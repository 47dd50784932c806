import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * Two foreign keys that the delivery path paid for on every row and that the code it checks
 * already guarantees (issue 23, bench:delivery-writes): each one ran, per inserted row, a
 * trigger with a `SELECT … FOR KEY SHARE` of the referenced row.
 *
 * - `attempts.delivery_id → deliveries` (ON DELETE CASCADE): attempts are only written by
 *   `recordAttempts` (webhooks.attempts.repository.ts), in the statement that settles their
 *   delivery, and only for a delivery that exists then; deliveries are only deleted by retention
 *   (which deletes their attempts in the same statement) and with their subscription (whose
 *   delete now deletes their attempts in the same statement, `deleteSubscription`). What the key
 *   still caught was an attempt recorded while its subscription was being deleted — and it did
 *   so by failing the whole batch of outcomes, whose deliveries were then all sent again. Now
 *   such an attempt is left behind, unread (attempts are read by their delivery).
 * - `deliveries.event_id → events`: a delivery is inserted in the very statement that inserts
 *   its event (`insertEventDeliveries`) or in the transaction that does (`insertSubscriptionEvent`),
 *   and retention deletes only events that no delivery needs any more and that arrived longer
 *   ago than the retention period (days): only a channel redelivering an event that old could
 *   store a delivery beside that delete, and the key would then have failed its fan-out anyway.
 *
 * `deliveries.subscription_id → subscriptions` stays: the key share it takes is what stops a
 * delivery being stored for a subscription being deleted (webhooks.active-subscription.ts), and
 * its cascade deletes the subscription's deliveries.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE ??.attempts DROP CONSTRAINT attempts_delivery_id_foreign`, [SCHEMA]);
  await knex.raw(`ALTER TABLE ??.deliveries DROP CONSTRAINT deliveries_event_id_foreign`, [SCHEMA]);
}

export async function down(knex: Knex): Promise<void> {
  // An attempt whose delivery is gone could only be left by the race above: nobody reads it.
  await knex.raw(
    `DELETE FROM ??.attempts a WHERE NOT EXISTS (SELECT 1 FROM ??.deliveries d WHERE d.id = a.delivery_id)`,
    [SCHEMA, SCHEMA],
  );
  await knex.raw(
    `ALTER TABLE ??.deliveries ADD CONSTRAINT deliveries_event_id_foreign FOREIGN KEY (event_id) REFERENCES ??.events (id)`,
    [SCHEMA, SCHEMA],
  );
  await knex.raw(
    `ALTER TABLE ??.attempts ADD CONSTRAINT attempts_delivery_id_foreign FOREIGN KEY (delivery_id) REFERENCES ??.deliveries (id) ON DELETE CASCADE`,
    [SCHEMA, SCHEMA],
  );
}
