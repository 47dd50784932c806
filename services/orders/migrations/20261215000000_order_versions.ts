import type { Knex } from "knex";
import { addVersionColumn, dropVersionColumn } from "../../../shared/database/version-column";

/** Each order's version: its ETag, and what If-Match on validate and cancel is checked against. */
export async function up(knex: Knex): Promise<void> {
  await addVersionColumn(knex, "orders", "orders");
}

export async function down(knex: Knex): Promise<void> {
  await dropVersionColumn(knex, "orders", "orders");
}
