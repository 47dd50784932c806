/**
 * Writes N validated orders with everything the services keep for them, in SQL that mirrors
 * what the services write (not through the services: their path takes minutes per 20,000 orders,
 * and the dispatcher needs a receiver; the measurement is about bytes on disk, which the rows
 * below reproduce column for column):
 *
 * - orders:   the order (snapshots of contact, customer, addresses), its 3 items (packaging,
 *             product, taxes and the partner's reference, as snapshots), and two outbox rows,
 *             `sales_order_created` and `sales_order_validated`, each holding the full order
 *             JSON (shared/messaging/outbox.ts appendEvent), published.
 * - webhooks: two subscriptions (one per event); per order two events whose body is the order
 *             JSON as sent (webhooks.fanout.ts), one delivery per event and subscription,
 *             succeeded, with its one attempt (200).
 *
 * Nothing in the references schema: a partner's references are made once, not per order.
 */
import type { Knex } from "knex";

export const ITEMS_PER_ORDER = 3;
const OWNER_CLIENT_ID = 1;
const CHUNK = 5_000;

/** Placeholders replaced per order in SQL, so one template serves every row. */
const ID = "@ID@";
const CODE = "@CODE@";
const EXTERNAL_ID = "@EXT@";

const ADDRESS = { recipient: "Bench Shop", street: "1 Load Street", zipCode: "75001", city: "Paris", country: "FR" };
const CONTACT = {
  id: 1,
  firstName: "Grace",
  lastName: "Hopper",
  email: "grace.hopper@example.com",
  reference: { id: 1, externalReference: "PARTNER-CONTACT-1" },
};
const CUSTOMER = { id: 1, name: "Navy Stores" };
const TAXES = [
  { name: "VAT", rate: 20, vat: true },
  { name: "Eco-tax", rate: 0.5, vat: false },
];

function item(position: number) {
  const n = position + 1;
  return {
    position,
    orderedQuantity: n + 0.5,
    packaging: {
      id: n,
      name: `Crate of 6 bottles ${n}`,
      unit: "bottle",
      unit_factor: 6,
      product: { id: n, code: `PRD-${n}`, label: `Mineral water 1.5 l, product ${n}`, taxes: TAXES },
    },
    packagingReference: { id: n, externalReference: `PARTNER-WATER-${n}`, label: `Water, crate ${n}` },
  };
}

const ITEMS = Array.from({ length: ITEMS_PER_ORDER }, (_, i) => item(i));
const STAMP = "2026-12-01T09:30:00.000Z";

/** The order as GET /orders/{id} shows it (orders.representation.ts), with the placeholders. */
function orderJson(status: "pending" | "validated"): string {
  return JSON.stringify({
    id: ID,
    code: CODE,
    status,
    externalId: EXTERNAL_ID,
    externalReference: "PO-BENCH",
    contact: CONTACT,
    customer: CUSTOMER,
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: ITEMS,
    createdAt: STAMP,
    updatedAt: STAMP,
    validatedAt: status === "validated" ? STAMP : null,
    cancelledAt: null,
  }).replace(`"${ID}"`, ID);
}

const codeOf = `'ORD-20261201-' || lpad(g::text, 6, '0')`;
const externalIdOf = `'bench-' || g`;
/** The SQL expression of the order JSON text of order `g`, from a template bound as `?`. */
const filledIn = `replace(replace(replace(?::text, '${ID}', g::text), '${CODE}', ${codeOf}), '${EXTERNAL_ID}', ${externalIdOf})`;

const EVENTS = [
  { name: "sales_order_created", status: "pending", subscriptionId: 1, outboxId: "2 * g - 1" },
  { name: "sales_order_validated", status: "validated", subscriptionId: 2, outboxId: "2 * g" },
] as const;

async function insertSubscriptions(db: Knex): Promise<void> {
  for (const e of EVENTS) {
    // The key and the sealed secret as long as the service's (random text: their bytes are what counts).
    await db.raw(
      `INSERT INTO webhooks.subscriptions (id, client_id, event, url, key, secret)
       VALUES (?, ?, ?, ?, 'whk_' || md5(random()::text), 'sealed:v1:' || repeat(md5(random()::text), 4))`,
      [
        e.subscriptionId,
        OWNER_CLIENT_ID + e.subscriptionId,
        e.name,
        `https://subscriber-${e.subscriptionId}.example.com/hooks/orders`,
      ],
    );
  }
}

async function insertOrders(db: Knex, from: number, to: number): Promise<void> {
  await db.raw(
    `INSERT INTO orders.orders (id, code, client_id, status, external_id, external_reference, contact, customer,
                                invoicing_address, delivery_address, created_at, updated_at, validated_at)
     SELECT g, ${codeOf}, ?, 'validated', ${externalIdOf}, 'PO-BENCH', ?::json, ?::json, ?::json, ?::json, now(), now(), now()
       FROM generate_series(?::int, ?::int) g`,
    [
      OWNER_CLIENT_ID,
      JSON.stringify(CONTACT),
      JSON.stringify(CUSTOMER),
      JSON.stringify(ADDRESS),
      JSON.stringify(ADDRESS),
      from,
      to,
    ],
  );
  for (const it of ITEMS) {
    await db.raw(
      `INSERT INTO orders.order_items (order_id, position, ordered_quantity, packaging_id, packaging, packaging_reference)
       SELECT g, ?, ?, ?, ?::json, ?::json FROM generate_series(?::int, ?::int) g`,
      [
        it.position,
        it.orderedQuantity,
        it.packaging.id,
        JSON.stringify(it.packaging),
        JSON.stringify(it.packagingReference),
        from,
        to,
      ],
    );
  }
}

/** The outbox rows, the webhook events made of them, the deliveries and their attempts. */
async function insertEvents(db: Knex, from: number, to: number): Promise<void> {
  for (const e of EVENTS) {
    const template = orderJson(e.status);
    await db.raw(
      `INSERT INTO orders.outbox (id, event, owner_client_id, entity, entity_id, data, created_at, published_at, request_id)
       SELECT ${e.outboxId}, ?, ?, 'order', g, (${filledIn})::json, now(), now(), gen_random_uuid()::text
         FROM generate_series(?::int, ?::int) g`,
      [e.name, OWNER_CLIENT_ID, template, from, to],
    );
    await db.raw(
      `INSERT INTO webhooks.events (id, event, owner_client_id, entity, entity_id, occurred_at, body, request_id, received_at)
       SELECT 'orders-' || (${e.outboxId}), ?, ?, 'order', g, now(), ${filledIn}, gen_random_uuid()::text, now()
         FROM generate_series(?::int, ?::int) g`,
      [e.name, OWNER_CLIENT_ID, template, from, to],
    );
    await db.raw(
      `WITH d AS (
         INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count, created_at, updated_at)
         SELECT ?, 'orders-' || (${e.outboxId}), 'msg_' || replace(gen_random_uuid()::text, '-', ''), 'succeeded', 1, now(), now()
           FROM generate_series(?::int, ?::int) g
         RETURNING id)
       INSERT INTO webhooks.attempts (delivery_id, attempted_at, status_code, error, duration_ms)
       SELECT id, now(), 200, NULL, 20 + id % 80 FROM d`,
      [e.subscriptionId, from, to],
    );
  }
}

/** Writes orders 1..count with their events, deliveries and attempts, CHUNK orders per statement. */
export async function writeOrders(db: Knex, count: number): Promise<void> {
  await insertSubscriptions(db);
  for (let from = 1; from <= count; from += CHUNK) {
    const to = Math.min(count, from + CHUNK - 1);
    await insertOrders(db, from, to);
    await insertEvents(db, from, to);
  }
  // As if the services had written them: the next id each sequence hands out follows ours.
  await db.raw(`SELECT setval(pg_get_serial_sequence('orders.orders', 'id'), ?)`, [count]);
  await db.raw(`SELECT setval(pg_get_serial_sequence('orders.outbox', 'id'), ?)`, [2 * count]);
  await db.raw(`SELECT setval(pg_get_serial_sequence('webhooks.subscriptions', 'id'), ?)`, [EVENTS.length]);
}
