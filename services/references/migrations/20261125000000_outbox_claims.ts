import type { Knex } from "knex";
import { addOutboxClaims, dropOutboxClaims } from "../../../shared/messaging/outbox";

const SCHEMA = "references";

/** The relay holds outbox rows by a lease while it publishes, not by an open transaction (shared/messaging/outbox-relay.mixin.ts). */
export async function up(knex: Knex): Promise<void> {
  await addOutboxClaims(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxClaims(knex, SCHEMA);
}
