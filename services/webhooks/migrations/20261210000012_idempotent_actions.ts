import type { Knex } from "knex";

const SCHEMA = "webhooks";

/**
 * Idempotent actions (webhooks.idempotency.ts): an Idempotency-Key on test, redeliver and recover
 * is claimed here, per client, before the action runs, and holds the answer once it ran. And a
 * disabled subscription's queued deliveries are `cancelled` from now on, so those left pending
 * by a disabling before this version are cancelled too (a recovery brings them back).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("idempotency_keys", (t) => {
    t.integer("client_id").notNullable();
    t.string("key", 255).notNullable();
    t.string("request_hash", 64).notNullable();
    // While the action runs: until when its claim holds (a process that died lets it go then).
    t.timestamp("locked_until", { useTz: true }).notNullable();
    // Once it ran: what it answered, replayed to the same key and body.
    t.integer("status_code");
    t.jsonb("response");
    t.text("location");
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(["client_id", "key"]);
  });
  await knex.raw(`CREATE INDEX idempotency_keys_created ON ??.idempotency_keys (created_at)`, [SCHEMA]);
  await knex.raw(
    `UPDATE ??.deliveries d SET status = 'cancelled', next_attempt_at = NULL, claim_token = NULL, updated_at = now()
      WHERE d.status = 'pending' AND d.subscription_id IN (SELECT id FROM ??.subscriptions WHERE status = 'disabled')`,
    [SCHEMA, SCHEMA],
  );
}

/** Keys go; the deliveries cancelled stay so (they were never going to be sent). */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("idempotency_keys");
}
