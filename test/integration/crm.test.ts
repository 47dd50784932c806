import { ADMIN, principal, startTestBroker, type TestBroker } from "../helpers/broker";

describe("crm service", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker({ services: ["crm"] });
  });
  afterAll(() => t.stop());

  it("when an admin creates a customer and a contact, then the contact lists with its customer", async () => {
    const customer = await t.call<{ id: number }>("crm.createCustomer", { name: "Acme" });
    const contact = await t.call<{ id: number; customer: { name: string } }>("crm.createContact", {
      customerId: customer.id,
      firstName: "Ada",
      lastName: "Lovelace",
      email: "ada@acme.test",
    });
    expect(contact.customer.name).toBe("Acme");
    const page = await t.call<{ items: { id: number }[] }>("crm.listContacts", {}, principal("backoffice", ["crm"]));
    expect(page.items.map((c) => c.id)).toContain(contact.id);
  });

  it("when the caller lacks the crm scope, then listing contacts is forbidden", async () => {
    await expect(t.call("crm.listContacts", {}, principal("partner", ["partner"]))).rejects.toMatchObject({
      code: 403,
      type: "FORBIDDEN",
    });
  });

  it("when the customer does not exist, then creating a contact names customerId", async () => {
    await expect(
      t.call("crm.createContact", { customerId: 999999, firstName: "A", lastName: "B", email: "a@b.test" }, ADMIN),
    ).rejects.toMatchObject({ code: 422, data: { errors: [{ path: "customerId" }] } });
  });

  it("when the same e-mail is upserted twice, then one contact is kept with the new names", async () => {
    const a = await t.call<{ id: number }>("crm.upsertContact", {
      firstName: "Bo",
      lastName: "One",
      email: "bo@x.test",
      customerName: "X Ltd",
    });
    const b = await t.call<{ id: number; lastName: string }>("crm.upsertContact", {
      firstName: "Bo",
      lastName: "Two",
      email: "bo@x.test",
      customerName: "X Ltd",
    });
    expect(b.id).toBe(a.id);
    expect(b.lastName).toBe("Two");
  });
});
