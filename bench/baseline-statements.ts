/**
 * The SQL the services run for one partner-reference order, statement for statement, as knex
 * sends it (captured with DEBUG=knex:query from the embedded mode on PostgreSQL):
 *
 *  references  findMatchingPackagingReferences select … from references.packaging_references
 *  references  findMatchingContactReferences  select … from references.contact_references
 *  orders      reserveOrders                  insert … on conflict do update returning nextval, now() (autocommit, asynchronous commit)
 *  orders      insertOrder                    one statement: with items as (insert …), event as (insert …) insert orders
 *
 * and, the first time a packaging or contact is seen only (both sides keep them in memory
 * afterwards): catalogue findPackagings + findProductTaxes, crm findContacts. A duplicate
 * externalId is refused by the unique index on insert, on both sides.
 *
 * Here they are plain `pg` calls: no knex, no Moleculer, no validation. Row types are the
 * repositories' own (type-only imports: nothing of those modules is loaded).
 */
import type { Pool, PoolClient } from "pg";
import type { PackagingRow, ProductTaxRow } from "../services/catalogue/catalogue.repository";
import type { ContactRow } from "../services/crm/crm.repository";
import type { ItemRow, OrderRow } from "../services/orders/orders.repository";
import type { ContactReferenceRow, PackagingReferenceRow } from "../services/references/references.repository";

type Queryable = Pool | PoolClient;

/** `$from, $from+1, …` for a list of n values. */
const placeholders = (n: number, from: number) => Array.from({ length: n }, (_, i) => `$${from + i}`).join(", ");

export async function findPackagingReferences(
  db: Queryable,
  clientId: number,
  codes: string[],
): Promise<PackagingReferenceRow[]> {
  const { rows } = await db.query<PackagingReferenceRow>(
    `select * from "references"."packaging_references" where "client_id" = $1 and ("external_reference" in (${placeholders(codes.length, 2)}))`,
    [clientId, ...codes],
  );
  return rows;
}

export async function findPackagings(db: Queryable, ids: number[]): Promise<PackagingRow[]> {
  const { rows } = await db.query<PackagingRow>(
    `select "g".*, "p"."code" as "product_code", "p"."label" as "product_label" from "catalogue"."packagings" as "g" ` +
      `inner join "catalogue"."products" as "p" on "p"."id" = "g"."product_id" where "g"."id" in (${placeholders(ids.length, 1)})`,
    ids,
  );
  return rows;
}

export async function findProductTaxes(db: Queryable, productIds: number[]): Promise<ProductTaxRow[]> {
  const { rows } = await db.query<ProductTaxRow>(
    `select "pt"."product_id", "t"."name", "t"."rate", "t"."vat" from "catalogue"."product_taxes" as "pt" ` +
      `inner join "catalogue"."taxes" as "t" on "t"."id" = "pt"."tax_id" where "pt"."product_id" in (${placeholders(productIds.length, 1)}) ` +
      `order by "pt"."product_id" asc, "pt"."position" asc`,
    productIds,
  );
  return rows;
}

export async function findContactReferences(
  db: Queryable,
  clientId: number,
  codes: string[],
): Promise<ContactReferenceRow[]> {
  const { rows } = await db.query<ContactReferenceRow>(
    `select * from "references"."contact_references" where "client_id" = $1 and ("external_reference" in (${placeholders(codes.length, 2)}))`,
    [clientId, ...codes],
  );
  return rows;
}

export async function findContacts(db: Queryable, ids: number[]): Promise<ContactRow[]> {
  const { rows } = await db.query<ContactRow>(
    `select "c".*, "k"."name" as "customer_name" from "crm"."contacts" as "c" inner join "crm"."customers" as "k" on "k"."id" = "c"."customer_id" ` +
      `where "c"."id" in (${placeholders(ids.length, 1)})`,
    ids,
  );
  return rows;
}

/**
 * orders.repository reserveOrders: the day's next code number, the order's id and the time,
 * committed asynchronously as the service does (the counter's row lock is not held across a WAL
 * flush): the same statement, so that the comparison stays fair.
 */
export async function reserveOrder(db: Queryable, day: string): Promise<{ codeNumber: number; id: number; at: Date }> {
  const { rows } = await db.query<{ last_value: number; id: number; at: Date }>(
    `WITH no_flush AS (SELECT set_config('synchronous_commit', 'off', true)),
     counter AS (
       INSERT INTO orders.order_code_counters (day, last_value) VALUES ($1, 1)
       ON CONFLICT (day) DO UPDATE SET last_value = order_code_counters.last_value + 1
       RETURNING last_value, now() AS at)
     SELECT last_value, nextval('orders.orders_id_seq')::int AS id, at FROM no_flush, counter`,
    [day],
  );
  return { codeNumber: rows[0].last_value, id: rows[0].id, at: rows[0].at };
}

const ITEM_COLUMNS = 6;
const ORDER_COLUMNS = 14;

/** orders.repository insertOrder: the order, its items and its outbox row in one statement, as knex compiles it. */
export async function insertOrder(
  db: Queryable,
  o: OrderRow,
  items: ItemRow[],
  e: { event: string; ownerClientId: number; entityId: number; data: unknown; requestId: string },
): Promise<void> {
  const itemValues = items.map((_, i) => `(${placeholders(ITEM_COLUMNS, i * ITEM_COLUMNS + 1)})`).join(", ");
  const outboxFrom = items.length * ITEM_COLUMNS + 1;
  const orderFrom = outboxFrom + 7;
  await db.query(
    `with "items" as (insert into "orders"."order_items" ("order_id", "ordered_quantity", "packaging", "packaging_id", "packaging_reference", "position") values ${itemValues}), ` +
      `"event" as (insert into "orders"."outbox" ("data", "entity", "entity_id", "event", "owner_client_id", "request_id", "traceparent") values (${placeholders(7, outboxFrom)})) ` +
      `insert into "orders"."orders" ("cancelled_at", "client_id", "code", "contact", "created_at", "customer", "delivery_address", "external_id", "external_reference", ` +
      `"id", "invoicing_address", "status", "updated_at", "validated_at") values (${placeholders(ORDER_COLUMNS, orderFrom)})`,
    [
      ...items.flatMap((i) => [
        i.order_id,
        i.ordered_quantity,
        JSON.stringify(i.packaging),
        i.packaging_id,
        i.packaging_reference ? JSON.stringify(i.packaging_reference) : null,
        i.position,
      ]),
      JSON.stringify(e.data),
      "order",
      e.entityId,
      e.event,
      e.ownerClientId,
      e.requestId,
      null,
      o.cancelled_at,
      o.client_id,
      o.code,
      JSON.stringify(o.contact),
      o.created_at,
      JSON.stringify(o.customer),
      JSON.stringify(o.delivery_address),
      o.external_id,
      o.external_reference,
      o.id,
      JSON.stringify(o.invoicing_address),
      o.status,
      o.updated_at,
      o.validated_at,
    ],
  );
}
