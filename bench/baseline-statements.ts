/**
 * The SQL the services run for one partner-reference order, statement for statement, as knex
 * sends it (captured with DEBUG=knex:query from the embedded mode on PostgreSQL):
 *
 *  references  findMatchingPackagingReferences select … from references.packaging_references
 *  references  findMatchingContactReferences  select … from references.contact_references
 *  orders      nextCodeNumber                 insert … on conflict do update (autocommit)
 *  orders      one transaction                insert orders, insert order_items, insert outbox
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
import type { ItemRow, NewOrder, OrderRow } from "../services/orders/orders.repository";
import type { ContactReferenceRow, PackagingReferenceRow } from "../services/references/references.repository";

type Queryable = Pool | PoolClient;

/** `$from, $from+1, …` for a list of n values. */
const placeholders = (n: number, from: number) => Array.from({ length: n }, (_, i) => `$${from + i}`).join(", ");

export async function findPackagingReferences(db: Queryable, clientId: number, codes: string[]): Promise<PackagingReferenceRow[]> {
  const { rows } = await db.query<PackagingReferenceRow>(
    `select * from "references"."packaging_references" where "client_id" = $1 and ("external_reference" in (${placeholders(codes.length, 2)}))`,
    [clientId, ...codes]);
  return rows;
}

export async function findPackagings(db: Queryable, ids: number[]): Promise<PackagingRow[]> {
  const { rows } = await db.query<PackagingRow>(
    `select "g".*, "p"."code" as "product_code", "p"."label" as "product_label" from "catalogue"."packagings" as "g" ` +
    `inner join "catalogue"."products" as "p" on "p"."id" = "g"."product_id" where "g"."id" in (${placeholders(ids.length, 1)})`, ids);
  return rows;
}

export async function findProductTaxes(db: Queryable, productIds: number[]): Promise<ProductTaxRow[]> {
  const { rows } = await db.query<ProductTaxRow>(
    `select "pt"."product_id", "t"."name", "t"."rate", "t"."vat" from "catalogue"."product_taxes" as "pt" ` +
    `inner join "catalogue"."taxes" as "t" on "t"."id" = "pt"."tax_id" where "pt"."product_id" in (${placeholders(productIds.length, 1)}) ` +
    `order by "pt"."product_id" asc, "pt"."position" asc`, productIds);
  return rows;
}

export async function findContactReferences(db: Queryable, clientId: number, codes: string[]): Promise<ContactReferenceRow[]> {
  const { rows } = await db.query<ContactReferenceRow>(
    `select * from "references"."contact_references" where "client_id" = $1 and ("external_reference" in (${placeholders(codes.length, 2)}))`,
    [clientId, ...codes]);
  return rows;
}

export async function findContacts(db: Queryable, ids: number[]): Promise<ContactRow[]> {
  const { rows } = await db.query<ContactRow>(
    `select "c".*, "k"."name" as "customer_name" from "crm"."contacts" as "c" inner join "crm"."customers" as "k" on "k"."id" = "c"."customer_id" ` +
    `where "c"."id" in (${placeholders(ids.length, 1)})`, ids);
  return rows;
}

export async function nextCodeNumber(db: Queryable, day: string): Promise<number> {
  const { rows } = await db.query<{ last_value: number }>(
    `INSERT INTO orders.order_code_counters (day, last_value) VALUES ($1, 1)
     ON CONFLICT (day) DO UPDATE SET last_value = order_code_counters.last_value + 1
     RETURNING last_value`, [day]);
  return rows[0].last_value;
}

export async function insertOrder(db: Queryable, o: NewOrder): Promise<OrderRow> {
  const { rows } = await db.query<OrderRow>(
    `insert into "orders"."orders" ("client_id", "code", "contact", "customer", "delivery_address", "external_id", "external_reference", ` +
    `"invoicing_address", "status") values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning *`,
    [o.clientId, o.code, JSON.stringify(o.contact), JSON.stringify(o.customer), JSON.stringify(o.deliveryAddress), o.externalId,
      o.externalReference, JSON.stringify(o.invoicingAddress), "pending"]);
  return rows[0];
}

const ITEM_COLUMNS = 6;

export async function insertItems(db: Queryable, items: ItemRow[]): Promise<void> {
  const values = items.map((_, i) => `(${placeholders(ITEM_COLUMNS, i * ITEM_COLUMNS + 1)})`).join(", ");
  await db.query(
    `insert into "orders"."order_items" ("order_id", "ordered_quantity", "packaging", "packaging_id", "packaging_reference", "position") values ${values}`,
    items.flatMap((i) => [i.order_id, i.ordered_quantity, JSON.stringify(i.packaging), i.packaging_id,
      i.packaging_reference ? JSON.stringify(i.packaging_reference) : null, i.position]));
}

export async function insertOutboxEvent(db: Queryable, e: { event: string; ownerClientId: number; entityId: number; data: unknown; requestId: string }): Promise<void> {
  await db.query(
    `insert into "orders"."outbox" ("data", "entity", "entity_id", "event", "owner_client_id", "request_id") values ($1, $2, $3, $4, $5, $6)`,
    [JSON.stringify(e.data), "order", e.entityId, e.event, e.ownerClientId, e.requestId]);
}
