import type { Knex } from "knex";

const SCHEMA = "crm";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("customers", (t) => {
    t.increments("id").primary();
    t.text("name").notNullable().unique();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.withSchema(SCHEMA).createTable("contacts", (t) => {
    t.increments("id").primary();
    t.integer("customer_id").notNullable().references("id").inTable(`${SCHEMA}.customers`);
    t.text("first_name").notNullable();
    t.text("last_name").notNullable();
    t.text("email").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("updated_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // One contact per e-mail address within a customer: what "find or create" matches on.
    t.unique(["customer_id", "email"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("contacts");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("customers");
}
