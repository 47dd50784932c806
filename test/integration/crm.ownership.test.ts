/**
 * Who owns CRM records (docs/api.md, "Who sees what"): a partner that sends contact data —
 * inline in an order or as a contact reference — with another's e-mail address or customer
 * name gets records of its own; A's and the admin's records stay as they were, read by A and
 * by the back office, and B never learns their ids.
 */
import fc from "fast-check";
import { ADMIN } from "../helpers/broker";
import {
  partnerOrder,
  protectedViews,
  startCrmTenants,
  type ContactReferenceJson,
  type CrmTenants,
} from "../helpers/crm-tenants";

let w: CrmTenants;
beforeAll(async () => {
  w = await startCrmTenants();
});
afterAll(() => w.t.stop());

interface Contact {
  id: number;
  firstName: string;
  lastName: string;
  customer: { id: number; name: string };
  ownerClientId: number | null;
}

let fresh = 0;
const word = fc.stringMatching(/^[A-Za-z]{1,12}$/);

/** Contact data B sends: e-mail, customer name and reference code drawn from everyone's, or new. */
function contactDataOf(w: CrmTenants) {
  return fc
    .record({
      externalReference: fc.constantFrom("B-CONTACT", "A-CONTACT", "NEW"),
      email: fc.constantFrom(w.a.email, w.a.email.toUpperCase(), w.admin.email, "bob@beta.test", "NEW"),
      customerName: fc.constantFrom(
        w.a.customerName,
        ` ${w.a.customerName} `,
        w.admin.customerName,
        "Beta Stores",
        "NEW",
      ),
      firstName: word,
      lastName: word,
      channel: fc.constantFrom("contact_references", "inline order"),
    })
    .map((d) => {
      const n = ++fresh;
      return {
        ...d,
        externalReference: d.externalReference === "NEW" ? `B-GEN-${n}` : d.externalReference,
        email: d.email === "NEW" ? `gen-${n}@beta.test` : d.email,
        customerName: d.customerName === "NEW" ? `Generated ${n}` : d.customerName,
      };
    });
}

type ContactData = ReturnType<typeof contactDataOf> extends fc.Arbitrary<infer D> ? D : never;

/** B sends the data; answers the contact and customer it got, as its reference or its order shows them. */
async function sendAsB(
  d: ContactData,
): Promise<{ contactId: number; customerId: number; firstName: string; lastName: string }> {
  const contact = {
    externalReference: d.externalReference,
    firstName: d.firstName,
    lastName: d.lastName,
    email: d.email,
  };
  const customer = { name: d.customerName };
  if (d.channel === "contact_references") {
    const r = await w.t.call<ContactReferenceJson>(
      "references.createContactReference",
      { contact, customer },
      w.partnerB,
    );
    return {
      contactId: r.contact.id,
      customerId: r.customer.id,
      firstName: r.contact.firstName,
      lastName: r.contact.lastName,
    };
  }
  const order = await w.t.call<{
    contact: { id: number; firstName: string; lastName: string };
    customer: { id: number };
  }>("orders.create", partnerOrder(w, { contact, customer }), w.partnerB);
  return {
    contactId: order.contact.id,
    customerId: order.customer.id,
    firstName: order.contact.firstName,
    lastName: order.contact.lastName,
  };
}

describe("when partner B sends contact data matching partner A's and the admin's records", () => {
  it("then A's and the admin's records are unchanged, and B gets records of its own, never their ids", async () => {
    await fc.assert(
      fc.asyncProperty(contactDataOf(w), async (d) => {
        const before = await protectedViews(w);
        const got = await sendAsB(d);

        expect(await protectedViews(w)).toEqual(before);
        expect([w.a.contactId, w.admin.contactId]).not.toContain(got.contactId);
        expect([w.a.customerId, w.admin.customerId]).not.toContain(got.customerId);
        // B's own contact takes the names B sent: renaming its own record stays possible.
        expect([got.firstName, got.lastName]).toEqual([d.firstName, d.lastName]);
        const seenByBackoffice = await w.t.call<Contact>("crm.getContact", { id: String(got.contactId) }, w.backoffice);
        expect(seenByBackoffice.ownerClientId).toBe(w.partnerB.clientId);
      }),
      { numRuns: 40 },
    );

    const bSees = await w.t.call<{ items: ContactReferenceJson[] }>(
      "references.listContactReferences",
      { limit: "500" },
      w.partnerB,
    );
    const foreignIds = [w.a.contactId, w.admin.contactId, w.a.customerId, w.admin.customerId];
    expect(bSees.items.flatMap((r) => [r.contact.id, r.customer.id]).filter((id) => foreignIds.includes(id))).toEqual(
      [],
    );
  });
});

describe("when the back office (scope crm) lists contacts", () => {
  it("then it sees every owner's: the admin's (no owner), A's and B's", async () => {
    const page = await w.t.call<{ items: Contact[] }>("crm.listContacts", { limit: "500" }, w.backoffice);
    const ownerOf = new Map(page.items.map((c) => [c.id, c.ownerClientId]));
    expect(ownerOf.get(w.admin.contactId)).toBeNull();
    expect(ownerOf.get(w.a.contactId)).toBe(w.partnerA.clientId);
    expect(ownerOf.get(w.b.reference.contact.id)).toBe(w.partnerB.clientId);
  });
});

describe("when the same customer name is used by the instance and by partners", () => {
  it("then each owner has its own customer of that name, and the instance's upsert finds the instance's", async () => {
    const asInstance = await w.t.call<Contact>(
      "crm.upsertContact",
      {
        firstName: "Ada",
        lastName: "Lovelace",
        email: w.admin.email,
        customerName: w.admin.customerName,
      },
      ADMIN,
    );
    expect([asInstance.id, asInstance.customer.id]).toEqual([w.admin.contactId, w.admin.customerId]);
    const asA = await w.t.call<Contact>(
      "crm.upsertContact",
      {
        ownerClientId: w.partnerA.clientId,
        firstName: "Ada",
        lastName: "L.",
        email: w.admin.email,
        customerName: w.admin.customerName,
      },
      ADMIN,
    );
    expect(asA.customer.id).not.toBe(w.admin.customerId);
    expect(asA.ownerClientId).toBe(w.partnerA.clientId);
    expect((await w.t.call<Contact>("crm.getContact", { id: String(w.admin.contactId) }, w.backoffice)).lastName).toBe(
      "Lovelace",
    );
  });

  it("then an admin still cannot create a second instance customer of one name", async () => {
    await expect(w.t.call("crm.createCustomer", { name: w.admin.customerName }, ADMIN)).rejects.toMatchObject({
      code: 409,
    });
  });
});
