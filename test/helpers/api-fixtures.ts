/**
 * The same small world as fixtures.ts, created over HTTP through the admin endpoints, for the
 * end-to-end tests: a back-office client, two partner applications, a contact, packagings and
 * each partner's references.
 */
import type { ApiClient } from "./http";
import { ADDRESS } from "./fixtures";

export interface ApiWorld {
  backofficeKey: string;
  partnerKey: string;
  otherPartnerKey: string;
  partnerClientId: number;
  contactId: number;
  packagingIds: number[];
  contactRef: string;
  packagingRefs: string[];
}

async function created<T>(p: Promise<{ status: number; body: unknown }>): Promise<T> {
  const r = await p;
  if (r.status !== 201 && r.status !== 200)
    throw new Error(`setup call answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as T;
}

export async function createApiWorld(admin: ApiClient, tag = Date.now().toString(36)): Promise<ApiWorld> {
  const client = (name: string, kind: string) =>
    created<{ id: number; apiKey: string }>(admin.post("/api/v1/clients", { name: `${name} ${tag}`, kind }));
  const backoffice = await client("Back office", "backoffice");
  const partner = await client("Partner", "partner");
  const otherPartner = await client("Other partner", "partner");

  const customer = await created<{ id: number }>(admin.post("/api/v1/customers", { name: `Acme ${tag}` }));
  const contact = await created<{ id: number }>(
    admin.post("/api/v1/contacts", {
      customerId: customer.id,
      firstName: "Ada",
      lastName: "Lovelace",
      email: `ada-${tag}@acme.test`,
    }),
  );
  const product = await created<{ id: number }>(
    admin.post("/api/v1/products", {
      code: `OIL-${tag}`,
      label: "Olive oil",
      taxes: [{ name: "VAT", rate: 20, vat: true }],
    }),
  );
  const packagingIds: number[] = [];
  for (const [name, factor] of [
    ["Bottle 1 L", 1],
    ["Case of 6", 6],
    ["Pallet", 480],
  ] as const) {
    packagingIds.push(
      (
        await created<{ id: number }>(
          admin.post("/api/v1/packagings", { productId: product.id, name, unit: "L", unit_factor: factor }),
        )
      ).id,
    );
  }
  const packagingRefs = packagingIds.map((_, i) => `REF-${i}-${tag}`);
  for (const [i, ref] of packagingRefs.entries()) {
    await created(
      admin.post("/api/v1/packaging_references", {
        clientId: partner.id,
        externalReference: ref,
        packagingId: packagingIds[i],
      }),
    );
  }
  const contactRef = `CUST-${tag}`;
  await created(
    admin.as(partner.apiKey).post("/api/v1/contact_references", {
      contact: {
        externalReference: contactRef,
        firstName: "Grace",
        lastName: "Hopper",
        email: `grace-${tag}@navy.test`,
      },
      customer: { name: `Navy ${tag}` },
    }),
  );

  return {
    backofficeKey: backoffice.apiKey,
    partnerKey: partner.apiKey,
    otherPartnerKey: otherPartner.apiKey,
    partnerClientId: partner.id,
    contactId: contact.id,
    packagingIds,
    contactRef,
    packagingRefs,
  };
}

/** A valid partner order naming everything by the partner's references. */
export function partnerOrderBody(w: ApiWorld, extra: Record<string, unknown> = {}) {
  return {
    externalReference: "PO-E2E",
    contact: { externalReferenceId: w.contactRef },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: w.packagingRefs.map((ref, i) => ({ externalReferenceId: ref, orderedQuantity: i + 1 })),
    ...extra,
  };
}
