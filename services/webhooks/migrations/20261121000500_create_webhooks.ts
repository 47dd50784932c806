import type { Knex } from "knex";

const SCHEMA = "webhooks";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("subscriptions", (t) => {
    t.increments("id").primary();
    t.integer("client_id").notNullable();
    t.text("event").notNullable();
    t.text("url").notNullable();
    // Both are needed in clear to send (X-WEBHOOK-KEY) and to sign (HMAC): they cannot be hashed.
    t.text("key").notNullable();
    t.text("secret").notNullable();
    // Decided from the client's scopes when subscribing, so fan-out needs no call per event.
    t.boolean("all_clients").notNullable().defaultTo(false);
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("rotated_at", { useTz: true });
    t.unique(["client_id", "event", "url"]);
    t.index(["event"]);
  });

  // One row per event that matched at least one subscription: the body is stored once, as the
  // exact JSON text that is sent, however many subscriptions receive it.
  await knex.schema.withSchema(SCHEMA).createTable("events", (t) => {
    t.text("id").primary();
    t.text("event").notNullable();
    t.integer("owner_client_id").notNullable();
    t.text("entity").notNullable();
    t.integer("entity_id").notNullable();
    t.timestamp("occurred_at", { useTz: true }).notNullable();
    t.text("body").notNullable();
    // The request that raised the event: attempts log under it (shared/observability/request-context.ts).
    t.text("request_id");
    t.timestamp("received_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.withSchema(SCHEMA).createTable("deliveries", (t) => {
    t.bigIncrements("id").primary();
    t.integer("subscription_id").notNullable().references("id").inTable(`${SCHEMA}.subscriptions`).onDelete("CASCADE");
    t.text("event_id").notNullable().references("id").inTable(`${SCHEMA}.events`);
    // Sent as webhook-id; the same for every attempt, so receivers can deduplicate on it.
    t.text("webhook_id").notNullable().unique();
    t.text("status").notNullable().defaultTo("pending");
    // Attempts since the delivery was created or last redelivered by hand: drives the schedule.
    t.integer("attempt_count").notNullable().defaultTo(0);
    // When pending: when it is due, or until when the dispatcher that claimed it holds it.
    t.timestamp("next_attempt_at", { useTz: true });
    // Set by the dispatcher that claimed it; its outcome is recorded only while it still matches.
    t.uuid("claim_token");
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("updated_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // A re-published event adds nothing.
    t.unique(["event_id", "subscription_id"]);
    t.index(["subscription_id", "id"]);
  });
  await knex.raw(
    `ALTER TABLE ??.deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'failed', 'refused'))`,
    [SCHEMA],
  );
  await knex.raw(`CREATE INDEX deliveries_due ON ??.deliveries (next_attempt_at) WHERE status = 'pending'`, [SCHEMA]);

  await knex.schema.withSchema(SCHEMA).createTable("attempts", (t) => {
    t.bigIncrements("id").primary();
    t.bigInteger("delivery_id").notNullable().references("id").inTable(`${SCHEMA}.deliveries`).onDelete("CASCADE");
    t.timestamp("attempted_at", { useTz: true }).notNullable();
    t.integer("status_code");
    t.text("error");
    t.integer("duration_ms").notNullable();
    t.index(["delivery_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("attempts");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("deliveries");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("events");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("subscriptions");
}
