import type { Knex } from "knex";
import { addVersionColumn, dropVersionColumn } from "../../../shared/database/version-column";

/** Each contact reference's version: its ETag, and what If-Match on POST /contact_references is checked against. */
export async function up(knex: Knex): Promise<void> {
  await addVersionColumn(knex, "references", "contact_references");
}

export async function down(knex: Knex): Promise<void> {
  await dropVersionColumn(knex, "references", "contact_references");
}
