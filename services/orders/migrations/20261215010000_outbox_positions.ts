import type { Knex } from "knex";
import { addOutboxPositions, dropOutboxPositions } from "../../../shared/messaging/outbox-feed";

const SCHEMA = "orders";

/** Each outbox row's position in the events feed: the id of the transaction that wrote it (shared/messaging/outbox-feed.ts). */
export async function up(knex: Knex): Promise<void> {
  await addOutboxPositions(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxPositions(knex, SCHEMA);
}
