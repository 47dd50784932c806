import type { Knex } from "knex";
import { createOutboxTable, dropOutboxTable } from "../../../shared/messaging/outbox";

const SCHEMA = "references";

export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex, SCHEMA);
  // contact_id and packaging_id name entities of the crm and catalogue services: no foreign
  // key crosses a service's schema, the owning service is asked instead.
  await knex.schema.withSchema(SCHEMA).createTable("contact_references", (t) => {
    t.increments("id").primary();
    t.integer("client_id").notNullable();
    t.text("external_reference").notNullable();
    t.integer("contact_id").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("updated_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(["client_id", "external_reference"]);
    t.index(["client_id", "id"]);
  });
  await knex.schema.withSchema(SCHEMA).createTable("packaging_references", (t) => {
    t.increments("id").primary();
    t.integer("client_id").notNullable();
    t.text("external_reference").notNullable();
    t.integer("packaging_id").notNullable();
    t.text("label").notNullable();
    t.boolean("active").notNullable().defaultTo(true);
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("updated_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(["client_id", "external_reference"]);
    t.index(["client_id", "id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("packaging_references");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("contact_references");
  await dropOutboxTable(knex, SCHEMA);
}
