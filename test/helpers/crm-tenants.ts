/**
 * Two partners (A, B) and a back-office client on one broker with crm, catalogue, references
 * and orders, for the tests of who owns CRM records and of refused requests writing nothing.
 * The admin owns one customer and contact; A owns a contact through its contact reference; B
 * has a reference of its own, an order with an externalId, and packaging references (one
 * inactive). `views` reads everyone's records as their owners and the back office see them.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { ADMIN, principal, startTestBroker, type TestBroker } from "./broker";
import { ADDRESS } from "./fixtures";

export interface ContactReferenceJson {
  id: number;
  externalReference: string;
  contact: { id: number; firstName: string; lastName: string; email: string };
  customer: { id: number; name: string };
  updatedAt: string;
}

export interface CrmRecord {
  contactId: number;
  customerId: number;
  email: string;
  customerName: string;
}

export interface CrmTenants {
  t: TestBroker;
  db: Knex;
  partnerA: Principal;
  partnerB: Principal;
  backoffice: Principal;
  admin: CrmRecord;
  /** A's contact reference and the CRM records it names. */
  a: CrmRecord & { referenceId: number };
  /** B's own contact reference (its code), and B's packaging references. */
  b: {
    reference: ContactReferenceJson;
    packagingRefs: string[];
    inactivePackagingRef: string;
    orderExternalId: string;
  };
  otherPartnersPackagingRef: string;
  packagingId: number;
}

/** The schemas the broker's services own (the whole of what an order can write). */
const SCHEMAS = ["crm", "catalogue", "references", "orders"];

export async function startCrmTenants(): Promise<CrmTenants> {
  const t = await startTestBroker({ services: ["crm", "catalogue", "references", "orders"] });
  const db = openDatabase(t.database.url);
  const partnerA = principal("partner", ["partner", "orders:write", "orders:read"]);
  const partnerB = principal("partner", ["partner", "orders:write", "orders:read"]);
  const backoffice = principal("backoffice", ["crm", "catalogue", "orders:write", "orders:read", "orders:manage"]);

  const customer = await t.call<{ id: number; name: string }>("crm.createCustomer", { name: "Acme Admin" }, ADMIN);
  const contact = await t.call<{ id: number; email: string }>(
    "crm.createContact",
    {
      customerId: customer.id,
      firstName: "Ada",
      lastName: "Lovelace",
      email: "ada@acme.test",
    },
    ADMIN,
  );
  const aRef = await t.call<ContactReferenceJson>(
    "references.createContactReference",
    {
      contact: { externalReference: "A-CONTACT", firstName: "Alice", lastName: "Anders", email: "alice@alpha.test" },
      customer: { name: "Alpha Foods" },
    },
    partnerA,
  );

  const product = await t.call<{ id: number }>("catalogue.createProduct", { code: "P-TENANTS", label: "Water" }, ADMIN);
  const packagingId = (
    await t.call<{ id: number }>(
      "catalogue.createPackaging",
      { productId: product.id, name: "Bottle", unit: "L", unit_factor: 1 },
      ADMIN,
    )
  ).id;
  const packagingRef = async (owner: Principal, externalReference: string, active = true) =>
    (
      await t.call<{ externalReference: string }>(
        "references.createPackagingReference",
        { clientId: owner.clientId, externalReference, packagingId, active },
        ADMIN,
      )
    ).externalReference;

  const bReference = await t.call<ContactReferenceJson>(
    "references.createContactReference",
    {
      contact: { externalReference: "B-CONTACT", firstName: "Bob", lastName: "Berg", email: "bob@beta.test" },
      customer: { name: "Beta Stores" },
    },
    partnerB,
  );
  const b = {
    reference: bReference,
    packagingRefs: [await packagingRef(partnerB, "B-WATER"), await packagingRef(partnerB, "B-WATER-2")],
    inactivePackagingRef: await packagingRef(partnerB, "B-OLD", false),
    orderExternalId: "B-ORDER-1",
  };
  const tenants: CrmTenants = {
    t,
    db,
    partnerA,
    partnerB,
    backoffice,
    admin: { contactId: contact.id, customerId: customer.id, email: contact.email, customerName: customer.name },
    a: {
      referenceId: aRef.id,
      contactId: aRef.contact.id,
      customerId: aRef.customer.id,
      email: aRef.contact.email,
      customerName: aRef.customer.name,
    },
    b,
    otherPartnersPackagingRef: await packagingRef(partnerA, "A-WATER"),
    packagingId,
  };
  await t.call("orders.create", partnerOrder(tenants, { externalId: b.orderExternalId }), partnerB);
  return tenants;
}

/** A valid order body for B: its own contact reference and packaging references. */
export function partnerOrder(w: CrmTenants, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    contact: { externalReferenceId: w.b.reference.externalReference },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: w.b.packagingRefs.map((externalReferenceId) => ({ externalReferenceId, orderedQuantity: 1 })),
    ...extra,
  };
}

/**
 * What each owner, and the back office, can read of the records B must never touch: A's
 * reference as A, and the admin's and A's contacts and customers as the back office.
 */
export async function protectedViews(w: CrmTenants): Promise<unknown> {
  const { t } = w;
  return {
    aReference: await t.call("references.getContactReference", { id: String(w.a.referenceId) }, w.partnerA),
    aContact: await t.call("crm.getContact", { id: String(w.a.contactId) }, w.backoffice),
    aCustomer: await t.call("crm.getCustomer", { id: String(w.a.customerId) }, w.backoffice),
    adminContact: await t.call("crm.getContact", { id: String(w.admin.contactId) }, w.backoffice),
    adminCustomer: await t.call("crm.getCustomer", { id: String(w.admin.customerId) }, w.backoffice),
  };
}

export type RowCounts = Record<string, number>;

/**
 * The row count of every table of the services' schemas (found in information_schema, so a
 * table added later is counted too), on the broker's own handle: PostgreSQL or PGlite alike.
 */
export async function rowCounts(db: Knex): Promise<RowCounts> {
  const tables = await db("information_schema.tables")
    .whereIn("table_schema", SCHEMAS)
    .andWhere("table_type", "BASE TABLE")
    // job_runs is the retention scheduler's own bookkeeping, written on its clock, never by a request.
    .andWhereNot("table_name", "like", "knex_migrations%")
    .andWhereNot("table_name", "job_runs")
    .select<{ table_schema: string; table_name: string }[]>("table_schema", "table_name");
  const counts: RowCounts = {};
  for (const { table_schema: schema, table_name: name } of tables) {
    const [{ n }] = await db.withSchema(schema).table(name).count<{ n: number | string }[]>({ n: "*" });
    counts[`${schema}.${name}`] = Number(n);
  }
  return counts;
}

/** The refusal a call ended in (its status and the fields it names); throws if it succeeded. */
export async function refusal(p: Promise<unknown>): Promise<{ status: number; paths: string[] }> {
  const outcome = await p.then(
    () => null,
    (err: unknown) => err as { code: number; data?: { errors?: { path?: string; field?: string }[] } },
  );
  if (!outcome) throw new Error("expected a refusal, the call succeeded");
  return { status: outcome.code, paths: (outcome.data?.errors ?? []).map((e) => e.path ?? e.field ?? "") };
}
