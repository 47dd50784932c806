import type { Knex } from "knex";
import { createJobRunsTable, dropJobRunsTable } from "../../../shared/database/periodic-job";

const SCHEMA = "webhooks";

/**
 * Retention (webhooks.retention.ts): the pruning job's claim row, and indexes that let each
 * batch read only what it removes: settled deliveries by when they settled, events by when
 * they arrived.
 */
export async function up(knex: Knex): Promise<void> {
  await createJobRunsTable(knex, SCHEMA);
  await knex.raw(`CREATE INDEX deliveries_settled ON ??.deliveries (updated_at) WHERE status <> 'pending'`, [SCHEMA]);
  await knex.raw(`CREATE INDEX events_received ON ??.events (received_at)`, [SCHEMA]);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX ??.events_received`, [SCHEMA]);
  await knex.raw(`DROP INDEX ??.deliveries_settled`, [SCHEMA]);
  await dropJobRunsTable(knex, SCHEMA);
}
