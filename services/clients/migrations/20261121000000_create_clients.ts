import type { Knex } from "knex";

const SCHEMA = "clients";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("clients", (t) => {
    t.increments("id").primary();
    t.text("name").notNullable();
    t.text("kind").notNullable();
    t.specificType("scopes", "text[]").notNullable();
    t.specificType("webhook_events", "text[]").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("revoked_at", { useTz: true });
  });
  await knex.schema.withSchema(SCHEMA).createTable("api_keys", (t) => {
    t.increments("id").primary();
    t.integer("client_id").notNullable().references("id").inTable(`${SCHEMA}.clients`);
    // First 12 hex characters of the SHA-256 of the key: finds candidates, proves nothing.
    t.string("lookup", 12).notNullable().index();
    t.string("hash", 64).notNullable().unique();
    t.text("hint").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("revoked_at", { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("api_keys");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("clients");
}
