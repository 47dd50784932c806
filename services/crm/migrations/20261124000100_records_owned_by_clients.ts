import type { Knex } from "knex";

const SCHEMA = "crm";

/**
 * A customer created on behalf of a partner (its inline contacts, its contact references) is
 * that partner's (docs/api.md, "Who sees what"): `owner_client_id` names it; null is the
 * instance's own (admins, the demo). Names are unique per owner, so a partner that names a
 * customer like another's gets one of its own instead of reaching theirs. A contact belongs to
 * its customer's owner: contacts stay unique per customer and e-mail.
 *
 * Rows from before this migration stay the instance's: partners' references keep naming them,
 * and the partner's next upsert of that contact makes one of its own and points its reference there.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).alterTable("customers", (t) => {
    t.integer("owner_client_id");
    t.dropUnique(["name"]);
    t.unique(["owner_client_id", "name"], { indexName: "customers_owner_name_unique" });
  });
  // NULLs never collide in a unique constraint: the instance's names need an index of their own.
  await knex.raw(
    `CREATE UNIQUE INDEX customers_instance_name_unique ON ${SCHEMA}.customers (name) WHERE owner_client_id IS NULL`,
  );
}

/** Fails (unique violation) while two owners have customers of one name: merge them first. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX ${SCHEMA}.customers_instance_name_unique`);
  await knex.schema.withSchema(SCHEMA).alterTable("customers", (t) => {
    t.dropUnique(["owner_client_id", "name"], "customers_owner_name_unique");
    t.dropColumn("owner_client_id");
    t.unique(["name"]);
  });
}
