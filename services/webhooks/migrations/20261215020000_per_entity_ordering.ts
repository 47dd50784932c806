import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * Per-entity order (docs/webhooks.md, "Order"; webhooks.ordering.ts): a subscription's
 * `ordering`, and on each delivery of a `per_entity` subscription its place in line — the entity
 * it is about and the event's sequence (its outbox id). A delivery leaves the line (its sequence
 * is cleared) when it is redelivered or recovered.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("subscriptions", (t) => {
    t.text("ordering").notNullable().defaultTo("none");
  });
  await knex.raw(
    `ALTER TABLE ??.subscriptions ADD CONSTRAINT subscriptions_ordering_check CHECK (ordering IN ('none', 'per_entity'))`,
    [SCHEMA],
  );
  await knex.schema.withSchema(SCHEMA).alterTable("deliveries", (t) => {
    // `<entity>:<entity id>`, e.g. `order:42`.
    t.text("entity_key");
    t.bigInteger("sequence");
  });
  // The claim's question "is an earlier delivery of this entity still unsettled?" is one index
  // probe per subscription of the line: only unsettled deliveries in line are in it.
  await knex.raw(
    `CREATE INDEX deliveries_in_line ON ??.deliveries (subscription_id, entity_key, sequence)
      WHERE status = 'pending' AND sequence IS NOT NULL`,
    [SCHEMA],
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX ??.deliveries_in_line`, [SCHEMA]);
  await knex.schema.withSchema(SCHEMA).alterTable("deliveries", (t) => {
    t.dropColumns("entity_key", "sequence");
  });
  await knex.raw(`ALTER TABLE ??.subscriptions DROP CONSTRAINT subscriptions_ordering_check`, [SCHEMA]);
  await knex.schema.withSchema(SCHEMA).alterTable("subscriptions", (t) => {
    t.dropColumn("ordering");
  });
}
