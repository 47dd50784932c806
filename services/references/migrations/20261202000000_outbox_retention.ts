import type { Knex } from "knex";
import { addOutboxRetention, dropOutboxRetention } from "../../../shared/messaging/outbox";

const SCHEMA = "references";

/** Sent outbox rows are pruned after OUTBOX_RETENTION, once per interval across replicas (shared/messaging/outbox-relay.mixin.ts). */
export async function up(knex: Knex): Promise<void> {
  await addOutboxRetention(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxRetention(knex, SCHEMA);
}
