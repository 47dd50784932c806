/**
 * The `version` column of an entity that answers with an ETag (shared/http/conditional.ts):
 * 1 when the row is written, one more in the statement of each change. Existing rows start at 1.
 */
import type { Knex } from "knex";

export async function addVersionColumn(knex: Knex, schema: string, table: string): Promise<void> {
  await knex.schema.withSchema(schema).alterTable(table, (t) => {
    t.integer("version").notNullable().defaultTo(1);
  });
}

export async function dropVersionColumn(knex: Knex, schema: string, table: string): Promise<void> {
  await knex.schema.withSchema(schema).alterTable(table, (t) => {
    t.dropColumn("version");
  });
}

/** The assignment that moves a row to its next version, for an UPDATE's SET (`version: nextVersion(db)`). */
export function nextVersion(db: Knex): Knex.Raw {
  return db.raw("version + 1");
}
