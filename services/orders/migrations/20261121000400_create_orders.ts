import type { Knex } from "knex";
import { createOutboxTable, dropOutboxTable } from "../../../shared/messaging/outbox";

const SCHEMA = "orders";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("orders", (t) => {
    t.increments("id").primary();
    t.text("code").notNullable().unique();
    t.integer("client_id").notNullable();
    t.text("status").notNullable();
    t.text("external_id");
    t.text("external_reference");
    t.json("contact").notNullable();
    t.json("customer").notNullable();
    t.json("invoicing_address").notNullable();
    t.json("delivery_address").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("updated_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("validated_at", { useTz: true });
    t.timestamp("cancelled_at", { useTz: true });
    // A client's own order id is unique for that client (NULLs do not collide).
    t.unique(["client_id", "external_id"], { indexName: "orders_client_external_id_unique" });
    t.index(["client_id", "id"]);
  });
  await knex.raw(
    `ALTER TABLE ${SCHEMA}.orders ADD CONSTRAINT orders_status_check CHECK (status IN ('pending', 'validated', 'cancelled'))`,
  );

  await knex.schema.withSchema(SCHEMA).createTable("order_items", (t) => {
    t.increments("id").primary();
    t.integer("order_id").notNullable().references("id").inTable(`${SCHEMA}.orders`).onDelete("CASCADE");
    t.integer("position").notNullable();
    t.decimal("ordered_quantity", 18, 3).notNullable();
    t.integer("packaging_id").notNullable();
    // Snapshots: the packaging, product, unit, unit factor and taxes as they were when ordered.
    // json, not jsonb: the stored text keeps its key order, so GET answers the very JSON POST did.
    t.json("packaging").notNullable();
    t.json("packaging_reference");
    t.unique(["order_id", "position"]);
  });

  // One row per day; incremented outside the order's transaction so it is never held long.
  await knex.schema.withSchema(SCHEMA).createTable("order_code_counters", (t) => {
    t.string("day", 8).primary();
    t.integer("last_value").notNullable();
  });

  await knex.schema.withSchema(SCHEMA).createTable("idempotency_keys", (t) => {
    t.integer("client_id").notNullable();
    t.string("key", 255).notNullable();
    t.string("request_hash", 64).notNullable();
    t.integer("order_id");
    t.json("response");
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(["client_id", "key"]);
  });

  await createOutboxTable(knex, SCHEMA);
}

export async function down(knex: Knex): Promise<void> {
  await dropOutboxTable(knex, SCHEMA);
  for (const table of ["idempotency_keys", "order_code_counters", "order_items", "orders"]) {
    await knex.schema.withSchema(SCHEMA).dropTableIfExists(table);
  }
}
