import type { Knex } from "knex";
import { addOutboxTraceparent, dropOutboxTraceparent } from "../../../shared/messaging/outbox";

const SCHEMA = "references";

/** The trace of the work that appended each event, continued by the relay (shared/observability/tracing.ts). */
export async function up(knex: Knex): Promise<void> {
  await addOutboxTraceparent(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxTraceparent(knex, SCHEMA);
}
