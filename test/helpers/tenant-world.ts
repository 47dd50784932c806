/**
 * Three tenants of one instance, created over HTTP for the isolation tests: partners A and B and
 * a back-office client C, each owning orders, webhook subscriptions and their deliveries, the
 * partners also contact and packaging references; plus what the admin owns (a CRM contact, a
 * catalogue). `readsOf` is what an owner can read of its own records, to compare before and
 * after another tenant's requests.
 */
import { importEnded, importResults, ndjson, pathOf, uploadImport } from "./order-imports";
import type { ApiClient } from "./http";
import { ADDRESS } from "./fixtures";

export type TenantName = "A" | "B" | "C";

/** The collections whose records belong to one client. */
export const OWNED_COLLECTIONS = [
  "orders",
  "contact_references",
  "packaging_references",
  "webhooks",
  "deliveries",
  "recoveries",
  "portal_sessions",
  "order_imports",
] as const;
export type OwnedCollection = (typeof OWNED_COLLECTIONS)[number];

export interface OwnedRecord {
  id: number;
  /** The owner's own code for it, where it has one (externalId, externalReference, url). */
  code?: string;
  /** For a delivery: its subscription. */
  parentId?: number;
}

export interface Tenant {
  name: TenantName;
  client: ApiClient;
  clientId: number;
  scopes: string[];
  records: Record<OwnedCollection, OwnedRecord[]>;
  /** A body this tenant may POST to /orders (its own contact and packagings). */
  orderBody: Record<string, unknown>;
  /** Its first order's externalId and the Idempotency-Key it was sent with. */
  idempotencyKey: string;
}

export interface CrmRecord {
  contactId: number;
  customerId: number;
  email: string;
  externalReference?: string;
  customerName: string;
}

export interface TenantWorld {
  tenants: Record<TenantName, Tenant>;
  admin: ApiClient;
  /** The admin's CRM contact, and each partner's contact (through its contact reference). */
  crm: { admin: CrmRecord; A: CrmRecord; B: CrmRecord };
  packagingIds: number[];
  productId: number;
}

async function ok<T>(what: string, p: Promise<{ status: number; body: unknown }>): Promise<T> {
  const r = await p;
  if (r.status < 200 || r.status > 202)
    throw new Error(`setup: ${what} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as T;
}

const emptyRecords = (): Record<OwnedCollection, OwnedRecord[]> => ({
  orders: [],
  contact_references: [],
  packaging_references: [],
  webhooks: [],
  deliveries: [],
  recoveries: [],
  portal_sessions: [],
  order_imports: [],
});

/** Events each tenant subscribes to: C (who hears every client's orders) only to moves that a refused request must never cause. */
const SUBSCRIBED: Record<TenantName, string[]> = {
  A: ["sales_order_created", "sales_order_validated"],
  B: ["sales_order_created", "sales_order_validated"],
  C: ["sales_order_validated", "sales_order_cancelled"],
};

export async function createTenantWorld(
  admin: ApiClient,
  receiverUrl: string,
  tag = Date.now().toString(36),
): Promise<TenantWorld> {
  const newClient = async (name: TenantName, kind: string) => {
    const c = await ok<{ id: number; apiKey: string; scopes: string[] }>(
      `client ${name}`,
      admin.post("/api/v1/clients", { name: `Tenant ${name} ${tag}`, kind }),
    );
    return {
      name,
      client: admin.as(c.apiKey),
      clientId: c.id,
      scopes: c.scopes,
      records: emptyRecords(),
      orderBody: {},
      idempotencyKey: `IK-${name}-${tag}`,
    };
  };
  const tenants = {
    A: await newClient("A", "partner"),
    B: await newClient("B", "partner"),
    C: await newClient("C", "backoffice"),
  };

  const customer = await ok<{ id: number; name: string }>(
    "customer",
    admin.post("/api/v1/customers", { name: `Admin customer ${tag}` }),
  );
  const adminEmail = `ada-${tag}@acme.test`;
  const contact = await ok<{ id: number }>(
    "contact",
    admin.post("/api/v1/contacts", {
      customerId: customer.id,
      firstName: "Ada",
      lastName: "Lovelace",
      email: adminEmail,
    }),
  );
  const product = await ok<{ id: number }>(
    "product",
    admin.post("/api/v1/products", {
      code: `P-${tag}`,
      label: "Olive oil",
      taxes: [{ name: "VAT", rate: 20, vat: true }],
    }),
  );
  const packagingIds: number[] = [];
  for (const [name, factor] of [
    ["Bottle", 1],
    ["Case", 6],
  ] as const) {
    packagingIds.push(
      (
        await ok<{ id: number }>(
          "packaging",
          admin.post("/api/v1/packagings", { productId: product.id, name, unit: "L", unit_factor: factor }),
        )
      ).id,
    );
  }

  for (const t of [tenants.A, tenants.B, tenants.C]) {
    for (const event of SUBSCRIBED[t.name]) {
      const s = await ok<{ id: number; url: string }>(
        `${t.name} subscription`,
        t.client.put("/api/v1/webhooks", { event, url: `${receiverUrl}/${t.name}/${event}` }),
      );
      t.records.webhooks.push({ id: s.id, code: `${event} ${s.url}` });
    }
  }

  const crm: Partial<TenantWorld["crm"]> = {
    admin: { contactId: contact.id, customerId: customer.id, email: adminEmail, customerName: customer.name },
  };
  for (const [i, t] of [tenants.A, tenants.B].entries()) {
    const code = `${t.name}-CASE-${tag}`;
    const pref = await ok<{ id: number }>(
      `${t.name} packaging reference`,
      admin.post("/api/v1/packaging_references", {
        clientId: t.clientId,
        externalReference: code,
        packagingId: packagingIds[i],
      }),
    );
    t.records.packaging_references.push({ id: pref.id, code });
    const cref = await ok<{
      id: number;
      externalReference: string;
      contact: { id: number; email: string };
      customer: { id: number; name: string };
    }>(
      `${t.name} contact reference`,
      t.client.post("/api/v1/contact_references", {
        contact: {
          externalReference: `${t.name}-CUST-${tag}`,
          firstName: "Grace",
          lastName: `Hopper ${t.name}`,
          email: `grace-${t.name.toLowerCase()}-${tag}@navy.test`,
        },
        customer: { name: `Navy ${t.name} ${tag}` },
      }),
    );
    t.records.contact_references.push({ id: cref.id, code: cref.externalReference });
    crm[t.name as "A" | "B"] = {
      contactId: cref.contact.id,
      customerId: cref.customer.id,
      email: cref.contact.email,
      externalReference: cref.externalReference,
      customerName: cref.customer.name,
    };
    t.orderBody = {
      contact: { externalReferenceId: cref.externalReference },
      invoicingAddress: ADDRESS,
      deliveryAddress: ADDRESS,
      items: [{ externalReferenceId: code, orderedQuantity: 2 }],
    };
  }
  tenants.C.orderBody = {
    contact: { id: contact.id },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: [{ packaging: packagingIds[0], orderedQuantity: 1 }],
  };

  for (const t of [tenants.A, tenants.B, tenants.C]) {
    const externalId = `EXT-${t.name}-${tag}`;
    const o = await ok<{ id: number }>(
      `${t.name} order`,
      t.client.post(
        "/api/v1/orders",
        { ...t.orderBody, externalId, externalReference: `PO-${t.name}` },
        { "Idempotency-Key": t.idempotencyKey },
      ),
    );
    t.records.orders.push({ id: o.id, code: externalId });
  }
  // One import of one order each, ended before the reads are taken (its order's event is then waited for like the others).
  for (const t of [tenants.A, tenants.B, tenants.C].filter((x) => x.scopes.includes("orders:write"))) {
    const externalId = `IMP-${t.name}-${tag}`;
    const upload = await uploadImport(t.client, ndjson([{ ...t.orderBody, externalId }]));
    if (upload.status !== 202) throw new Error(`setup: ${t.name}'s import answered ${upload.status}`);
    const location = pathOf(upload.headers.location);
    await importEnded(t.client, location);
    t.records.order_imports.push({ id: upload.body.id });
    const [result] = await importResults(t.client, location);
    if (!result?.order) throw new Error(`setup: ${t.name}'s imported order was refused: ${JSON.stringify(result)}`);
    t.records.orders.push({ id: (result.order as { id: number }).id, code: externalId });
  }
  // Moves that fire the events every tenant listens to: C (the back office) validates the partners' orders and cancels its own.
  for (const t of [tenants.A, tenants.B])
    await ok(`validate ${t.name}'s order`, tenants.C.client.post(`/api/v1/orders/${t.records.orders[0].id}/validate`));
  await ok("cancel C's order", tenants.C.client.post(`/api/v1/orders/${tenants.C.records.orders[0].id}/cancel`));

  const world: TenantWorld = { tenants, admin, crm: crm as TenantWorld["crm"], packagingIds, productId: product.id };
  await waitForDeliveries(world);
  // One recovery per tenant (every delivery has settled, so it re-queues nothing and the reads stay stable).
  for (const t of [tenants.A, tenants.B, tenants.C]) {
    const s = t.records.webhooks[0];
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const r = await ok<{ id: number }>(
      `${t.name} recovery`,
      t.client.post(`/api/v1/webhooks/${s.id}/recover`, { since }),
    );
    t.records.recoveries.push({ id: r.id, parentId: s.id });
    // A sign-in link to the portal each: another tenant revoking it must find nothing.
    const link = await ok<{ id: number }>(`${t.name} portal link`, t.client.post("/api/v1/portal_sessions"));
    t.records.portal_sessions.push({ id: link.id });
  }
  return world;
}

/** Until each subscription holds at least one delivery and none is pending any more, so that reads are stable. */
async function waitForDeliveries(world: TenantWorld, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const t of Object.values(world.tenants)) {
    for (const s of t.records.webhooks) {
      for (;;) {
        const { body } = await t.client.get<{ id: number; status: string }[]>(
          `/api/v1/webhooks/${s.id}/deliveries?limit=500`,
        );
        if (body.length > 0 && body.every((d) => d.status !== "pending")) {
          t.records.deliveries.push(...body.map((d) => ({ id: d.id, parentId: s.id })));
          break;
        }
        if (Date.now() > deadline)
          throw new Error(
            `setup: the deliveries of ${t.name}'s subscription ${s.id} (${s.code}) did not settle: ${JSON.stringify(body)}`,
          );
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
}

/** Everything `t` reads of its own records (and, for a back office, of the CRM), by request. */
export async function readsOf(world: TenantWorld, t: Tenant): Promise<Record<string, unknown>> {
  const paths: string[] = [];
  const has = (scope: string) => t.scopes.includes(scope);
  for (const o of t.records.orders) paths.push(`/api/v1/orders/${o.id}`);
  // A back office sees every client's orders: its list grows with theirs, so only its own orders are compared.
  if (!has("orders:manage")) paths.push("/api/v1/orders?limit=500");
  if (has("partner")) {
    paths.push("/api/v1/contact_references?limit=500", "/api/v1/packaging_references?limit=500");
    for (const r of t.records.contact_references) paths.push(`/api/v1/contact_references/${r.id}`);
    for (const r of t.records.packaging_references) paths.push(`/api/v1/packaging_references/${r.id}`);
  }
  for (const i of t.records.order_imports)
    paths.push(`/api/v1/order_imports/${i.id}`, `/api/v1/order_imports/${i.id}/results`);
  paths.push("/api/v1/webhooks?limit=500");
  for (const s of t.records.webhooks)
    paths.push(`/api/v1/webhooks/${s.id}`, `/api/v1/webhooks/${s.id}/deliveries?limit=500`);
  if (has("crm")) {
    for (const c of Object.values(world.crm))
      paths.push(`/api/v1/contacts/${c.contactId}`, `/api/v1/customers/${c.customerId}`);
  }
  const reads: Record<string, unknown> = {};
  for (const path of paths) {
    const r = await t.client.get(path);
    reads[`${t.name} GET ${path}`] = { status: r.status, body: r.body };
  }
  return reads;
}

/** The reads of every tenant but `except`. */
export async function readsOfAll(world: TenantWorld, except?: TenantName): Promise<Record<string, unknown>> {
  const all: Record<string, unknown> = {};
  for (const t of Object.values(world.tenants)) if (t.name !== except) Object.assign(all, await readsOf(world, t));
  return all;
}

/** The reads that differ between two snapshots ("" when none). */
export function differences(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  return Object.keys({ ...before, ...after })
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
    .map(
      (k) =>
        `${k}\n      before: ${JSON.stringify(before[k]).slice(0, 400)}\n      after:  ${JSON.stringify(after[k]).slice(0, 400)}`,
    );
}
