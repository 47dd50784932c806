import type { Knex } from "knex";
import { addOutboxTraceparent, dropOutboxTraceparent } from "../../../shared/messaging/outbox";

const SCHEMA = "webhooks";

/**
 * Traces (shared/observability/tracing.ts): an event remembers the trace of the fan-out that recorded it,
 * which its delivery attempts continue; the webhooks outbox, like every outbox, the trace of
 * the work that appended each row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("events", (t) => {
    t.text("traceparent");
  });
  await addOutboxTraceparent(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxTraceparent(knex, SCHEMA);
  await knex.schema.withSchema(SCHEMA).alterTable("events", (t) => {
    t.dropColumn("traceparent");
  });
}
