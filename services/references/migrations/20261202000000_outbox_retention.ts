import type { Knex } from "knex";
import { addOutboxSentIndex, dropOutboxSentIndex } from "../../../shared/outbox";
import { createJobRunsTable, dropJobRunsTable } from "../../../shared/periodic-job";

const SCHEMA = "references";

/** Sent outbox rows are pruned after OUTBOX_RETENTION, once per interval across replicas (shared/outbox-relay.mixin.ts). */
export async function up(knex: Knex): Promise<void> {
  await addOutboxSentIndex(knex, SCHEMA);
  await createJobRunsTable(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropJobRunsTable(knex, SCHEMA);
  await dropOutboxSentIndex(knex, SCHEMA);
}
