import type { Knex } from "knex";

const SCHEMA = "orders";

/**
 * An order whose contact comes inline is preceded by writes in crm and references. Its
 * externalId is claimed here first, so that a second request with the same externalId is
 * refused before it writes anything, even while the first is still being taken
 * (services/orders/orders.external-id-claim.ts). A row lives only while its order is being taken.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("external_id_claims", (t) => {
    t.integer("client_id").notNullable();
    t.text("external_id").notNullable();
    t.timestamp("claimed_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(["client_id", "external_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("external_id_claims");
}
