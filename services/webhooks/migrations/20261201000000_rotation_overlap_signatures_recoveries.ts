import type { Knex } from "knex";

/**
 * Secret rotation with an overlap, optional Ed25519 signatures, and recovery jobs
 * (docs/webhooks.md, "Rotating the secret", "Ed25519 signatures", "Recovering after an outage").
 * Every key column is sealed like `key` and `secret` (shared/security/secret-box.ts); only the public key
 * is in clear.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema("webhooks").alterTable("subscriptions", (t) => {
    // What a rotation replaced, still used beside the new values until `previous_until`.
    t.text("previous_key");
    t.text("previous_secret");
    t.text("previous_signing_key");
    t.timestamp("previous_until", { useTz: true });
    // Ed25519 (Standard Webhooks `v1a`): the PKCS#8 private key, sealed, and the `whpk_` public key.
    t.text("signing_key");
    t.text("public_key");
  });

  await knex.schema.withSchema("webhooks").createTable("recoveries", (t) => {
    t.bigIncrements("id").primary();
    t.integer("subscription_id").notNullable().references("id").inTable("webhooks.subscriptions").onDelete("CASCADE");
    t.timestamp("since", { useTz: true }).notNullable();
    // As asked (null: up to when it was asked), so the same request can be recognised; `until` is the window's end.
    t.timestamp("requested_until", { useTz: true });
    t.timestamp("until", { useTz: true }).notNullable();
    t.boolean("all_deliveries").notNullable();
    t.text("status").notNullable().defaultTo("queued");
    // The replica working on it holds it until `claimed_until`; another takes over after that.
    t.uuid("claim_token");
    t.timestamp("claimed_until", { useTz: true });
    // Deliveries are walked by id: the last one looked at.
    t.bigInteger("after_delivery_id").notNullable().defaultTo(0);
    t.integer("examined").notNullable().defaultTo(0);
    t.integer("queued").notNullable().defaultTo(0);
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("finished_at", { useTz: true });
  });
  await knex.raw(
    `ALTER TABLE webhooks.recoveries ADD CONSTRAINT recoveries_status_check CHECK (status IN ('queued', 'running', 'done'))`,
  );
  // One unfinished recovery per subscription: the same request again finds it (idempotent).
  await knex.raw(
    `CREATE UNIQUE INDEX recoveries_one_active ON webhooks.recoveries (subscription_id) WHERE status <> 'done'`,
  );
  await knex.raw(`CREATE INDEX recoveries_unfinished ON webhooks.recoveries (id) WHERE status <> 'done'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema("webhooks").dropTableIfExists("recoveries");
  await knex.schema.withSchema("webhooks").alterTable("subscriptions", (t) => {
    t.dropColumns(
      "previous_key",
      "previous_secret",
      "previous_signing_key",
      "previous_until",
      "signing_key",
      "public_key",
    );
  });
}
