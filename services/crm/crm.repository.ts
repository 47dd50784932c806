/**
 * The only file of the crm service that touches knex.
 */
import type { Db } from "../../shared/db";
import { fetchPage, type PageQuery } from "../../shared/paging";

const S = "crm";

export interface CustomerRow {
  id: number;
  name: string;
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
}

function contactsQuery(db: Db) {
  return db.withSchema(S).table("contacts as c").join("customers as k", "k.id", "c.customer_id")
    .select("c.*", "k.name as customer_name");
}

export async function listContacts(db: Db, page: PageQuery) {
  return fetchPage<ContactRow & Record<string, unknown>>(contactsQuery(db), page, "c.id", (r) => r.id);
}

export async function findContacts(db: Db, ids: number[]): Promise<ContactRow[]> {
  return contactsQuery(db).whereIn("c.id", ids);
}

export async function listCustomers(db: Db, page: PageQuery) {
  return fetchPage<CustomerRow & Record<string, unknown>>(db.withSchema(S).table("customers").select("*"), page, "id", (r) => r.id);
}

export async function findCustomer(db: Db, id: number): Promise<CustomerRow | undefined> {
  return db.withSchema(S).table("customers").where({ id }).first();
}

export async function insertCustomer(db: Db, name: string): Promise<CustomerRow> {
  const [row] = await db.withSchema(S).table("customers").insert({ name }).returning("*");
  return row as CustomerRow;
}

export async function insertContact(db: Db, c: { customerId: number; firstName: string; lastName: string; email: string }): Promise<number> {
  const [row] = await db.withSchema(S).table("contacts")
    .insert({ customer_id: c.customerId, first_name: c.firstName, last_name: c.lastName, email: c.email }).returning("id");
  return (row as { id: number }).id;
}

/** The customer of this name, created if missing; safe under concurrency. */
export async function upsertCustomerByName(db: Db, name: string): Promise<number> {
  await db.withSchema(S).table("customers").insert({ name }).onConflict("name").ignore();
  const row = await db.withSchema(S).table("customers").where({ name }).first("id");
  return (row as { id: number }).id;
}

/** The contact with this e-mail at this customer, created or given the new names. */
export async function upsertContact(db: Db, c: { customerId: number; firstName: string; lastName: string; email: string }): Promise<number> {
  const [row] = await db.withSchema(S).table("contacts")
    .insert({ customer_id: c.customerId, first_name: c.firstName, last_name: c.lastName, email: c.email })
    .onConflict(["customer_id", "email"])
    .merge({ first_name: c.firstName, last_name: c.lastName, updated_at: db.fn.now() })
    .returning("id");
  return (row as { id: number }).id;
}
