/**
 * A small catalogue, CRM and two partners' references, created through the admin actions,
 * for tests that take orders.
 */
import type { Principal } from "../../shared/security/auth";
import { principal, type TestBroker } from "./broker";

export interface Fixtures {
  backoffice: Principal;
  partner: Principal;
  otherPartner: Principal;
  contactId: number;
  packagingIds: number[];
  /** The partner's contact reference. */
  contactRef: { id: number; externalReference: string };
  /** The other partner's contact reference (must stay invisible to `partner`). */
  otherContactRef: { id: number; externalReference: string };
  /** The partner's packaging references: three active, the last one inactive. */
  packagingRefs: { id: number; externalReference: string }[];
  inactivePackagingRef: { id: number; externalReference: string };
  otherPackagingRef: { id: number; externalReference: string };
}

export const ADDRESS = {
  recipient: "Ada Lovelace",
  street: "1 Analytical Way",
  zipCode: "75001",
  city: "Paris",
  country: "FR",
};

export async function createFixtures(t: TestBroker, tag = String(Date.now())): Promise<Fixtures> {
  const backoffice = principal("backoffice", [
    "crm",
    "catalogue",
    "orders:write",
    "orders:read",
    "orders:manage",
    "webhooks",
  ]);
  const partner = principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]);
  const otherPartner = principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]);

  const customer = await t.call<{ id: number }>("crm.createCustomer", { name: `Acme ${tag}` });
  const contact = await t.call<{ id: number }>("crm.createContact", {
    customerId: customer.id,
    firstName: "Ada",
    lastName: "Lovelace",
    email: `ada-${tag}@acme.test`,
  });

  const product = await t.call<{ id: number }>("catalogue.createProduct", {
    code: `P-${tag}`,
    label: "Olive oil",
    taxes: [
      { name: "VAT", rate: 20, vat: true },
      { name: "Eco", rate: 0.5, vat: false },
    ],
  });
  const packagingIds: number[] = [];
  for (const [name, factor] of [
    ["Bottle 1 L", 1],
    ["Case of 6", 6],
    ["Pallet", 480],
    ["Sample", 0.1],
  ] as const) {
    const p = await t.call<{ id: number }>("catalogue.createPackaging", {
      productId: product.id,
      name,
      unit: "L",
      unit_factor: factor,
    });
    packagingIds.push(p.id);
  }

  const packagingRef = async (owner: Principal, externalReference: string, packagingId: number, active = true) =>
    t.call<{ id: number; externalReference: string }>("references.createPackagingReference", {
      clientId: owner.clientId,
      externalReference,
      packagingId,
      active,
    });
  const packagingRefs = [
    await packagingRef(partner, `BOTTLE-${tag}`, packagingIds[0]),
    await packagingRef(partner, `CASE-${tag}`, packagingIds[1]),
    await packagingRef(partner, `PALLET-${tag}`, packagingIds[2]),
  ];
  const inactivePackagingRef = await packagingRef(partner, `OLD-${tag}`, packagingIds[3], false);
  const otherPackagingRef = await packagingRef(otherPartner, `THEIRS-${tag}`, packagingIds[0]);

  const contactRef = async (owner: Principal, externalReference: string) =>
    (
      await t.call<{ reference: { id: number; externalReference: string } }>("references.upsertContactReference", {
        clientId: owner.clientId,
        contact: {
          externalReference,
          firstName: "Grace",
          lastName: "Hopper",
          email: `grace-${externalReference}@navy.test`,
        },
        customer: { name: `Navy ${tag}` },
      })
    ).reference;

  return {
    backoffice,
    partner,
    otherPartner,
    contactId: contact.id,
    packagingIds,
    contactRef: await contactRef(partner, `CUST-${tag}`),
    otherContactRef: await contactRef(otherPartner, `OTHER-${tag}`),
    packagingRefs,
    inactivePackagingRef,
    otherPackagingRef,
  };
}

/** A valid order body for a partner, naming everything by its own references. */
export function partnerOrder(f: Fixtures, extra: Record<string, unknown> = {}) {
  return {
    externalReference: "PO-1",
    contact: { externalReferenceId: f.contactRef.externalReference },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: f.packagingRefs.map((r, i) => ({ externalReferenceId: r.externalReference, orderedQuantity: i + 1 })),
    ...extra,
  };
}

/** A valid order body for a back-office client, naming everything by CRM and catalogue ids. */
export function backofficeOrder(f: Fixtures, extra: Record<string, unknown> = {}) {
  return {
    contact: { id: f.contactId },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: [
      { packaging: f.packagingIds[0], orderedQuantity: 2 },
      { packaging: f.packagingIds[1], orderedQuantity: 1.5 },
    ],
    ...extra,
  };
}
