import type { Principal } from "../../shared/security/auth";
import { loadConfig, type Config } from "../../shared/config/config";
import { clusterDemoWanted, demoWanted, seedDemoDataIfWanted } from "../../runtime/demo/demo";
import { ADMIN, startTestBroker, type TestBroker } from "../helpers/broker";

const SERVICES = ["clients", "crm", "catalogue", "references"] as const;

function configFor(t: TestBroker, env: Record<string, string>): Config {
  return loadConfig({ DATABASE_URL: t.database.url, SERVICES: SERVICES.join(","), PORT: "3999", ...env });
}

interface Printed {
  text: string;
  backofficeKey: string;
  partnerKey: string;
  backofficeOrder: { contact: { id: number }; items: { packaging: number; orderedQuantity: number }[] };
  partnerOrder: {
    contact: { externalReferenceId: string };
    items: { externalReferenceId: string; orderedQuantity: number }[];
  };
}

/** Runs the seed and returns what it printed (null when it printed nothing). */
async function seedAndCapture(t: TestBroker, cfg: Config): Promise<Printed | null> {
  const log = jest.spyOn(console, "log").mockImplementation(() => undefined);
  try {
    await seedDemoDataIfWanted(t.broker, cfg);
    if (log.mock.calls.length === 0) return null;
    expect(log).toHaveBeenCalledTimes(1);
    const text = String(log.mock.calls[0][0]);
    const bodies = [...text.matchAll(/-d '(\{.*\})'/g)].map((m) => JSON.parse(m[1]));
    return {
      text,
      backofficeKey: /Back office API key: (\S+)/.exec(text)![1],
      partnerKey: /Partner app API key: (\S+)/.exec(text)![1],
      backofficeOrder: bodies[0],
      partnerOrder: bodies[1],
    };
  } finally {
    log.mockRestore();
  }
}

describe("demo data seed", () => {
  let t: TestBroker;
  let first: Printed;
  beforeAll(async () => {
    t = await startTestBroker({ services: [...SERVICES] });
  });
  afterAll(() => t.stop());

  it("when an embedded start finds no demo, then it seeds and prints the URL, both keys and two order commands once", async () => {
    first = (await seedAndCapture(t, configFor(t, { DEMO_DATA: "auto" })))!;
    expect(first).not.toBeNull();
    expect(first.text).toContain("http://localhost:3999/api/v1");
    expect(first.text).toContain("curl -sS -X POST http://localhost:3999/api/v1/orders");
    const backoffice = await t.call<Principal>("clients.authenticate", { key: first.backofficeKey }, null);
    const partner = await t.call<Principal>("clients.authenticate", { key: first.partnerKey }, null);
    expect(backoffice).toMatchObject({ name: "Demo back office", kind: "backoffice" });
    expect(partner).toMatchObject({ name: "Demo partner app", kind: "partner" });

    const refs = await t.call<{ items: { active: boolean }[] }>("references.listPackagingReferences", {}, partner);
    expect(refs.items).toHaveLength(4);
    expect(refs.items.filter((r) => !r.active)).toHaveLength(1);
    const contactRefs = await t.call<{ items: unknown[] }>("references.listContactReferences", {}, partner);
    expect(contactRefs.items).toHaveLength(1);
    const products = await t.call<{ items: { taxes: unknown[] }[] }>("catalogue.listProducts", {}, backoffice);
    expect(products.items).toHaveLength(3);
    expect(products.items.filter((p) => p.taxes.length === 0)).toEqual([]);
    const contacts = await t.call<{ items: { customer: { id: number }; ownerClientId: number | null }[] }>(
      "crm.listContacts",
      {},
      backoffice,
    );
    // The instance's three, and the partner's own one that its contact reference made (docs/api.md, "Who sees what").
    const instances = contacts.items.filter((c) => c.ownerClientId === null);
    expect(instances).toHaveLength(3);
    expect(new Set(instances.map((c) => c.customer.id)).size).toBe(2);
    expect(contacts.items.filter((c) => c.ownerClientId === partner.clientId)).toHaveLength(1);
  });

  it("when the printed orders are read, then each names what its client kind can see, in the interface's fields", async () => {
    const backoffice = await t.call<Principal>("clients.authenticate", { key: first.backofficeKey }, null);
    const partner = await t.call<Principal>("clients.authenticate", { key: first.partnerKey }, null);
    for (const body of [first.backofficeOrder, first.partnerOrder]) {
      expect(Object.keys(body).sort()).toEqual([
        "contact",
        "deliveryAddress",
        "externalId",
        "externalReference",
        "invoicingAddress",
        "items",
      ]);
    }
    await expect(t.call("crm.getContact", { id: first.backofficeOrder.contact.id }, backoffice)).resolves.toMatchObject(
      { id: first.backofficeOrder.contact.id },
    );
    for (const item of first.backofficeOrder.items) {
      await expect(t.call("catalogue.getPackaging", { id: item.packaging }, backoffice)).resolves.toMatchObject({
        id: item.packaging,
      });
    }
    const contact = await t.call(
      "references.resolveContact",
      { clientId: partner.clientId, by: "external", value: first.partnerOrder.contact.externalReferenceId },
      null,
    );
    expect(contact).toMatchObject({ contact: { id: first.backofficeOrder.contact.id } });
    const items = await t.call<({ active: boolean } | null)[]>(
      "references.resolvePackagings",
      {
        clientId: partner.clientId,
        refs: first.partnerOrder.items.map((i) => ({ by: "external", value: i.externalReferenceId })),
      },
      null,
    );
    expect(items).toEqual(first.partnerOrder.items.map(() => expect.objectContaining({ active: true })));
  });

  it("when auto finds the demo already there, then it seeds nothing and prints one line saying how to get fresh keys", async () => {
    const log = jest.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      await seedDemoDataIfWanted(t.broker, configFor(t, { DEMO_DATA: "auto" }));
      expect(log.mock.calls.map((call) => String(call[0]))).toEqual([
        expect.stringMatching(/^Demo data: already there;.*DEMO_DATA=always issues fresh demo keys/),
      ]);
    } finally {
      log.mockRestore();
    }
    const clients = await t.call<{ items: unknown[] }>("clients.list", {}, ADMIN);
    expect(clients.items).toHaveLength(2);
  });

  it("when always finds the demo already there, then it prints fresh keys and duplicates nothing", async () => {
    const again = (await seedAndCapture(t, configFor(t, { DEMO_DATA: "always" })))!;
    expect(again.backofficeKey).not.toBe(first.backofficeKey);
    await expect(t.call("clients.authenticate", { key: first.backofficeKey }, null)).rejects.toMatchObject({
      code: 401,
    });
    await expect(t.call("clients.authenticate", { key: again.backofficeKey }, null)).resolves.toMatchObject({
      name: "Demo back office",
    });
    expect(again.backofficeOrder).toEqual(first.backofficeOrder);
    const products = await t.call<{ items: unknown[] }>("catalogue.listProducts", {}, ADMIN);
    expect(products.items).toHaveLength(3);
  });

  it("when the mode or the process does not call for a demo, then none is wanted", () => {
    const base = configFor(t, { DEMO_DATA: "auto" });
    expect(demoWanted(base)).toBe(true);
    expect(demoWanted({ ...base, demoData: "never" })).toBe(false);
    expect(demoWanted({ ...base, transporter: "nats://127.0.0.1:4222" })).toBe(false);
    expect(demoWanted({ ...base, demoData: "always", transporter: "nats://127.0.0.1:4222" })).toBe(true);
    expect(demoWanted({ ...base, demoData: "always", services: ["gateway", "orders"] })).toBe(false);
    // start:cluster seeds with auto too (it is a local trial), not when its SERVICES leave one out.
    expect(clusterDemoWanted({ ...base, transporter: "nats://127.0.0.1:4222" })).toBe(true);
    expect(clusterDemoWanted({ ...base, demoData: "never" })).toBe(false);
    expect(clusterDemoWanted({ ...base, services: ["webhooks"] })).toBe(false);
  });
});
