import type { Knex } from "knex";

const SCHEMA = "clients";

/**
 * Sessions of the subscriber portal (services/clients/clients.portal-sessions.ts): a sign-in link
 * (one-time token) that becomes a session (bearer token) once the page exchanges it. Only the
 * SHA-256 of each token is kept, like API keys.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("portal_sessions", (t) => {
    t.increments("id").primary();
    t.integer("client_id").notNullable().references("id").inTable(`${SCHEMA}.clients`);
    t.string("link_hash", 64).notNullable().unique();
    t.timestamp("link_expires_at", { useTz: true }).notNullable();
    // Set by the exchange: the session's token, found like an API key (lookup, then hash).
    t.string("lookup", 12).index();
    t.string("hash", 64).unique();
    t.timestamp("exchanged_at", { useTz: true });
    t.timestamp("expires_at", { useTz: true });
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("revoked_at", { useTz: true });
    t.index(["client_id", "id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("portal_sessions");
}
