import type { Knex } from "knex";
import {
  addOutboxClaims,
  addOutboxSentIndex,
  createOutboxTable,
  dropOutboxTable,
} from "../../../shared/messaging/outbox";

const SCHEMA = "webhooks";

/**
 * Endpoint health (docs/webhooks.md, "Endpoint health"): a subscription can be disabled, and
 * keeps the figures of its latest attempts; a receiver's Retry-After pauses its endpoint for
 * every replica; `webhook_endpoint_disabled` leaves through this service's own outbox, in the
 * transaction that disables.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("subscriptions", (t) => {
    t.text("status").notNullable().defaultTo("active");
    t.timestamp("disabled_at", { useTz: true });
    t.text("disabled_reason");
    // Since the first of an unbroken run of failed attempts; null after a success.
    t.timestamp("failing_since", { useTz: true });
    t.timestamp("last_success_at", { useTz: true });
    t.timestamp("last_failure_at", { useTz: true });
    t.integer("last_failure_status_code");
    t.text("last_failure_error");
  });
  await knex.raw(
    `ALTER TABLE ??.subscriptions ADD CONSTRAINT subscriptions_status_check CHECK (status IN ('active', 'disabled'))`,
    [SCHEMA],
  );

  // An endpoint (URL origin) that asked to be left alone until `until` (429/503 with Retry-After).
  await knex.schema.withSchema(SCHEMA).createTable("endpoint_pauses", (t) => {
    t.text("endpoint").primary();
    t.timestamp("until", { useTz: true }).notNullable();
  });

  await createOutboxTable(knex, SCHEMA);
  await addOutboxClaims(knex, SCHEMA);
  await addOutboxSentIndex(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxTable(knex, SCHEMA);
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("endpoint_pauses");
  await knex.raw(`ALTER TABLE ??.subscriptions DROP CONSTRAINT subscriptions_status_check`, [SCHEMA]);
  await knex.schema.withSchema(SCHEMA).alterTable("subscriptions", (t) => {
    t.dropColumns(
      "status",
      "disabled_at",
      "disabled_reason",
      "failing_since",
      "last_success_at",
      "last_failure_at",
      "last_failure_status_code",
      "last_failure_error",
    );
  });
}
