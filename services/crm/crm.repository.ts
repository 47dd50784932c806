/**
 * The only file of the crm service that touches knex.
 */
import type { Db } from "../../shared/database/db";
import { fetchPage, type PageQuery } from "../../shared/http/paging";

const S = "crm";

/** The client a record was created for; null for the instance's own (admins, the demo). */
export type Owner = number | null;

export interface CustomerRow {
  id: number;
  name: string;
  owner_client_id: Owner;
  created_at: Date;
}

export interface ContactRow {
  id: number;
  customer_id: number;
  first_name: string;
  last_name: string;
  email: string;
  created_at: Date;
  updated_at: Date;
  customer_name: string;
  /** The customer's owner, which is the contact's. */
  owner_client_id: Owner;
}

function contactsQuery(db: Db) {
  return db
    .withSchema(S)
    .table("contacts as c")
    .join("customers as k", "k.id", "c.customer_id")
    .select("c.*", "k.name as customer_name", "k.owner_client_id");
}

export async function listContacts(db: Db, page: PageQuery) {
  return fetchPage<ContactRow & Record<string, unknown>>(contactsQuery(db), page, "c.id", (r) => r.id);
}

export async function findContacts(db: Db, ids: number[]): Promise<ContactRow[]> {
  return contactsQuery(db).whereIn("c.id", ids);
}

export async function listCustomers(db: Db, page: PageQuery) {
  return fetchPage<CustomerRow & Record<string, unknown>>(
    db.withSchema(S).table("customers").select("*"),
    page,
    "id",
    (r) => r.id,
  );
}

export async function findCustomer(db: Db, id: number): Promise<CustomerRow | undefined> {
  return db.withSchema(S).table<CustomerRow, CustomerRow[]>("customers").where({ id }).first();
}

export async function insertCustomer(db: Db, name: string): Promise<CustomerRow> {
  const [row] = await db.withSchema(S).table("customers").insert({ name }).returning<CustomerRow[]>("*");
  return row;
}

export async function insertContact(
  db: Db,
  c: { customerId: number; firstName: string; lastName: string; email: string },
): Promise<number> {
  const [row] = await db
    .withSchema(S)
    .table("contacts")
    .insert({ customer_id: c.customerId, first_name: c.firstName, last_name: c.lastName, email: c.email })
    .returning<{ id: number }[]>("id");
  return row.id;
}

/**
 * The owner's customer of this name, created if missing; safe under concurrency. Only that
 * owner's customers are candidates: another owner's customer of the same name is never reached.
 */
export async function upsertCustomerByName(db: Db, owner: Owner, name: string): Promise<number> {
  const insert = db.withSchema(S).table("customers").insert({ name, owner_client_id: owner });
  // The conflict target is the unique index of this owner's names (see the migration).
  await (
    owner === null
      ? insert.onConflict(db.raw("(name) WHERE owner_client_id IS NULL"))
      : insert.onConflict(["owner_client_id", "name"])
  ).ignore();
  const row = await db
    .withSchema(S)
    .table<CustomerRow, CustomerRow[]>("customers")
    .where({ name, owner_client_id: owner })
    .first("id");
  return row!.id;
}

/**
 * The contact with this e-mail at this customer, created or given the new names. The customer
 * comes from upsertCustomerByName, so the contact is the same owner's.
 */
export async function upsertContact(
  db: Db,
  c: { customerId: number; firstName: string; lastName: string; email: string },
): Promise<number> {
  const [row] = await db
    .withSchema(S)
    .table("contacts")
    .insert({ customer_id: c.customerId, first_name: c.firstName, last_name: c.lastName, email: c.email })
    .onConflict(["customer_id", "email"])
    .merge({ first_name: c.firstName, last_name: c.lastName, updated_at: db.fn.now() })
    .returning<{ id: number }[]>("id");
  return row.id;
}
