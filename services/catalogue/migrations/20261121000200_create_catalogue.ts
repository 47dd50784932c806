import type { Knex } from "knex";

const SCHEMA = "catalogue";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("taxes", (t) => {
    t.increments("id").primary();
    t.text("name").notNullable();
    // A percentage (20 for 20 %); unconstrained numeric so that 5.5 or 0.125 are kept exactly.
    t.decimal("rate", null).notNullable();
    t.boolean("vat").notNullable();
    // A tax is its name, rate and kind: products naming the same triple share one row.
    t.unique(["name", "rate", "vat"]);
  });
  await knex.schema.withSchema(SCHEMA).createTable("products", (t) => {
    t.increments("id").primary();
    t.text("code").notNullable().unique();
    t.text("label").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.withSchema(SCHEMA).createTable("product_taxes", (t) => {
    t.integer("product_id").notNullable().references("id").inTable(`${SCHEMA}.products`);
    t.integer("tax_id").notNullable().references("id").inTable(`${SCHEMA}.taxes`);
    // The order in which the product's taxes were given, kept in every representation.
    t.integer("position").notNullable();
    t.primary(["product_id", "position"]);
    t.unique(["product_id", "tax_id"]);
  });
  await knex.schema.withSchema(SCHEMA).createTable("packagings", (t) => {
    t.increments("id").primary();
    t.integer("product_id").notNullable().references("id").inTable(`${SCHEMA}.products`).index();
    t.text("name").notNullable();
    t.text("unit").notNullable();
    t.decimal("unit_factor", null).notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("packagings");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("product_taxes");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("products");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("taxes");
}
