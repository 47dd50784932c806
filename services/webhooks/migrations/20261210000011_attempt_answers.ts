import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * What the endpoint answered (docs/webhooks.md, "Deliveries and redelivery"): each attempt keeps
 * why it was made, a bounded part of the answer (webhooks.response-capture.ts) and until when a
 * honoured Retry-After paused its endpoint. A delivery remembers why its next attempt will be
 * made; null is `scheduled`, the common case, which so costs no byte per delivery.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("attempts", (t) => {
    t.text("trigger").notNullable().defaultTo("scheduled");
    t.jsonb("response_headers");
    t.text("response_body");
    t.boolean("response_body_truncated").notNullable().defaultTo(false);
    t.timestamp("paused_until", { useTz: true });
  });
  await knex.raw(
    `ALTER TABLE ??.attempts ADD CONSTRAINT attempts_trigger_check CHECK (trigger IN ('scheduled', 'retry', 'redelivery', 'recovery', 'test'))`,
    [SCHEMA],
  );
  await knex.schema.withSchema(SCHEMA).alterTable("deliveries", (t) => {
    t.text("next_trigger");
  });
  await knex.raw(
    `ALTER TABLE ??.deliveries ADD CONSTRAINT deliveries_next_trigger_check CHECK (next_trigger IN ('retry', 'redelivery', 'recovery', 'test'))`,
    [SCHEMA],
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("deliveries", (t) => {
    t.dropColumn("next_trigger");
  });
  await knex.schema.withSchema(SCHEMA).alterTable("attempts", (t) => {
    t.dropColumns("trigger", "response_headers", "response_body", "response_body_truncated", "paused_until");
  });
}
