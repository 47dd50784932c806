import type { Knex } from "knex";

const SCHEMA = "orders";

/**
 * What GET /api/v1/orders looks orders up by (services/orders/orders.lookups.repository.ts). Each
 * exists twice: led by client_id for a partner, who sees only its own orders, and alone for the
 * back office, who sees all. The time ranges end in id: their pages are keyset on (time, id).
 * `code` is unique already, and so is a partner's (client_id, external_id).
 */
const INDEXES: { name: string; columns: string[] }[] = [
  { name: "orders_external_id", columns: ["external_id"] },
  { name: "orders_client_external_reference", columns: ["client_id", "external_reference"] },
  { name: "orders_external_reference", columns: ["external_reference"] },
  { name: "orders_client_created_at", columns: ["client_id", "created_at", "id"] },
  { name: "orders_created_at", columns: ["created_at", "id"] },
  { name: "orders_client_updated_at", columns: ["client_id", "updated_at", "id"] },
  { name: "orders_updated_at", columns: ["updated_at", "id"] },
  // "What was validated since my last sync": recent changes are mostly of one status, which the
  // planner cannot know from the columns' separate statistics, so the status leads an index of its own.
  { name: "orders_client_status_updated_at", columns: ["client_id", "status", "updated_at", "id"] },
  { name: "orders_status_updated_at", columns: ["status", "updated_at", "id"] },
];

// IF NOT EXISTS: on a large table an operator may build them CONCURRENTLY beforehand (bench/README.md).
export async function up(knex: Knex): Promise<void> {
  for (const index of INDEXES)
    await knex.raw(`CREATE INDEX IF NOT EXISTS ?? ON ??.orders (${index.columns.map(() => "??").join(", ")})`, [
      index.name,
      SCHEMA,
      ...index.columns,
    ]);
}

export async function down(knex: Knex): Promise<void> {
  for (const index of INDEXES) await knex.raw("DROP INDEX IF EXISTS ??.??", [SCHEMA, index.name]);
}
