import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * Editable subscriptions (docs/webhooks.md, "Changing a subscription"): a description, custom
 * request headers and a rate limit per subscription, and the throttle state that holds the
 * rate limit across every webhooks replica (webhooks.rate-limiter.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("subscriptions", (t) => {
    t.text("description");
    // The custom headers' names in clear (the representation shows them), their values sealed
    // as one JSON object (they may be credentials for the receiver): webhooks.custom-headers.ts.
    t.specificType("header_names", "text[]").notNullable().defaultTo("{}");
    t.text("headers");
    // Deliveries per second this subscription's endpoint accepts; null for no limit.
    t.integer("rate_limit");
  });
  await knex.raw(
    `ALTER TABLE ??.subscriptions ADD CONSTRAINT subscriptions_rate_limit_check CHECK (rate_limit BETWEEN 1 AND 1000)`,
    [SCHEMA],
  );
  // The dispatchers read which subscriptions are limited about once a second.
  await knex.raw(`CREATE INDEX subscriptions_rate_limited ON ??.subscriptions (id) WHERE rate_limit IS NOT NULL`, [
    SCHEMA,
  ]);

  // GCRA state of a rate-limited subscription: the theoretical arrival time of its next send.
  // A table of its own: every send of a limited subscription updates it, and the subscription
  // row is locked by health notes and fan-out meanwhile.
  await knex.schema.withSchema(SCHEMA).createTable("throttles", (t) => {
    t.integer("subscription_id").primary().references("id").inTable(`${SCHEMA}.subscriptions`).onDelete("CASCADE");
    t.timestamp("next_send_at", { useTz: true }).notNullable();
    // What the latest admission granted: its UPDATE returns it (RETURNING sees only the new row).
    t.integer("granted").notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("throttles");
  await knex.raw(`DROP INDEX ??.subscriptions_rate_limited`, [SCHEMA]);
  await knex.raw(`ALTER TABLE ??.subscriptions DROP CONSTRAINT subscriptions_rate_limit_check`, [SCHEMA]);
  await knex.schema.withSchema(SCHEMA).alterTable("subscriptions", (t) => {
    t.dropColumns("description", "header_names", "headers", "rate_limit");
  });
}
