import { migrations } from "../../services/references/migrations";
import type { Principal } from "../../shared/security/auth";
import { ADMIN, principal, startTestBroker, type TestBroker } from "../helpers/broker";
import {
  callWithMeta,
  countQueries,
  createPackaging,
  createProduct,
  databaseOf,
  ECO_TAX,
  VAT_20,
  type PackagingJson,
} from "../helpers/catalogue-fixtures";
import { migrationRoundTrip } from "../helpers/migration-roundtrip";

interface ContactReferenceJson {
  id: number;
  externalReference: string;
  contact: { id: number; firstName: string; lastName: string; email: string };
  customer: { id: number; name: string };
  createdAt: string;
  updatedAt: string;
}

interface PackagingReferenceJson {
  id: number;
  externalReference: string;
  active: boolean;
  label: string;
  packaging: PackagingJson;
}

interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

function contactBody(
  externalReference: string,
  email = `${externalReference.toLowerCase()}@acme.test`,
  customer = "Acme Retail",
) {
  return {
    contact: { externalReference, firstName: "Ada", lastName: "Lovelace", email },
    customer: { name: customer },
  };
}

describe("references service", () => {
  let t: TestBroker;
  const partnerA = principal("partner", ["partner", "orders:write"]);
  const partnerB = principal("partner", ["partner", "orders:write"]);

  const createContactReference = (as: Principal, body: object) =>
    callWithMeta<ContactReferenceJson>(t, "references.createContactReference", body, as);
  const createPackagingReference = (fields: {
    clientId: number;
    externalReference: string;
    packagingId: number;
    label?: string;
    active?: boolean;
  }) => t.call<PackagingReferenceJson>("references.createPackagingReference", fields, ADMIN);

  beforeAll(async () => {
    t = await startTestBroker({ services: ["crm", "catalogue", "references"] });
  });
  afterAll(() => t.stop());

  describe("contact references", () => {
    it("when a partner registers a contact, then it is 201 with a Location, the crm contact and its customer", async () => {
      const { result, meta } = await createContactReference(partnerA, contactBody("C-100"));
      expect(meta.$statusCode).toBe(201);
      expect(meta.$location).toBe(`/api/v1/contact_references/${result.id}`);
      expect(result).toMatchObject({
        externalReference: "C-100",
        contact: { firstName: "Ada", lastName: "Lovelace", email: "c-100@acme.test" },
        customer: { name: "Acme Retail" },
      });
      const crmContact = await t.call<{ id: number; customer: { id: number } }>("crm.getContact", {
        id: result.contact.id,
      });
      expect(crmContact.customer.id).toBe(result.customer.id);
      expect(await t.call("references.getContactReference", { id: String(result.id) }, partnerA)).toEqual(result);
    });

    it("when the same external reference is registered again, then it is 200, the same record re-pointed, and one created event", async () => {
      const first = await createContactReference(partnerA, contactBody("C-200", "first@acme.test"));
      const again = await createContactReference(partnerA, contactBody("C-200", "second@globex.test", "Globex"));
      // No explicit status: the gateway answers 200 by default.
      expect(again.meta.$statusCode ?? 200).toBe(200);
      expect(again.meta.$location).toBeUndefined();
      expect(again.result.id).toBe(first.result.id);
      expect(again.result.contact.id).not.toBe(first.result.contact.id);
      expect(again.result).toMatchObject({ contact: { email: "second@globex.test" }, customer: { name: "Globex" } });

      const events = await databaseOf(t)
        .withSchema("references")
        .table("outbox")
        .where({ entity: "contact_reference", entity_id: first.result.id });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        event: "contact_reference_created",
        owner_client_id: partnerA.clientId,
        data: first.result,
      });
    });

    it("when called internally for a partner, then upsertContactReference answers the record and whether it was created", async () => {
      const params = { clientId: partnerA.clientId, ...contactBody("C-300") };
      const created = await t.call<{ reference: ContactReferenceJson; created: boolean }>(
        "references.upsertContactReference",
        params,
        null,
      );
      const reused = await t.call<{ reference: ContactReferenceJson; created: boolean }>(
        "references.upsertContactReference",
        params,
        null,
      );
      expect(created.created).toBe(true);
      expect(reused).toMatchObject({
        created: false,
        reference: { id: created.reference.id, contact: { id: created.reference.contact.id } },
      });
    });

    it("when a partner lists its contact references, then it sees its own and none of another partner's", async () => {
      const mine = await createContactReference(partnerA, contactBody("C-400"));
      const theirs = await createContactReference(partnerB, contactBody("C-400"));
      expect(theirs.result.id).not.toBe(mine.result.id);
      const page = await t.call<Page<ContactReferenceJson>>(
        "references.listContactReferences",
        { limit: 500 },
        partnerA,
      );
      const ids = page.items.map((r) => r.id);
      expect(ids).toContain(mine.result.id);
      expect(ids).not.toContain(theirs.result.id);
    });

    it("when a partner reads another partner's contact reference, then it is 404, not 403", async () => {
      const theirs = await createContactReference(partnerB, contactBody("C-500"));
      await expect(t.call("references.getContactReference", { id: theirs.result.id }, partnerA)).rejects.toMatchObject({
        code: 404,
        type: "NOT_FOUND",
      });
    });

    it("when the body has an unknown nested field or a bad e-mail, then validation names it", async () => {
      const body = contactBody("C-600");
      await expect(
        createContactReference(partnerA, { ...body, contact: { ...body.contact, phone: "123" } }),
      ).rejects.toMatchObject({
        code: 422,
        type: "VALIDATION_ERROR",
        data: [{ field: "contact", type: "objectStrict" }],
      });
      await expect(
        createContactReference(partnerA, { ...body, contact: { ...body.contact, email: "not-an-email" } }),
      ).rejects.toMatchObject({ code: 422, data: [{ field: "contact.email" }] });
    });

    it("when the caller lacks the partner scope, then contact references are forbidden", async () => {
      const backoffice = principal("backoffice", ["crm", "catalogue"]);
      await expect(createContactReference(backoffice, contactBody("C-700"))).rejects.toMatchObject({ code: 403 });
      await expect(t.call("references.listContactReferences", {}, backoffice)).rejects.toMatchObject({ code: 403 });
    });
  });

  describe("resolveContact (internal)", () => {
    let ref: ContactReferenceJson;
    beforeAll(async () => {
      ref = (await createContactReference(partnerA, contactBody("CUST-42"))).result;
    });
    const resolve = (clientId: number, by: "internal" | "external", value: string | number) =>
      t.call<ContactReferenceJson | null>("references.resolveContact", { clientId, by, value }, null);

    it("when named by its internal id, then the reference is found (a number value is accepted)", async () => {
      expect(await resolve(partnerA.clientId, "internal", String(ref.id))).toEqual(ref);
      expect(await resolve(partnerA.clientId, "internal", ref.id)).toEqual(ref);
    });

    it("when named by the partner's external reference, or by its id in digits, then the reference is found", async () => {
      expect(await resolve(partnerA.clientId, "external", "CUST-42")).toEqual(ref);
      expect(await resolve(partnerA.clientId, "external", String(ref.id))).toEqual(ref);
    });

    it("when the internal mode gets an external code, or nothing matches, then it is null", async () => {
      expect(await resolve(partnerA.clientId, "internal", "CUST-42")).toBeNull();
      expect(await resolve(partnerA.clientId, "external", "NOPE")).toBeNull();
      expect(await resolve(partnerA.clientId, "external", "99999999999999")).toBeNull();
    });

    it("when another partner names this reference, then it is null whatever the mode", async () => {
      expect(await resolve(partnerB.clientId, "internal", String(ref.id))).toBeNull();
      expect(await resolve(partnerB.clientId, "external", "CUST-42")).toBeNull();
      expect(await resolve(partnerB.clientId, "external", String(ref.id))).toBeNull();
    });

    it("when an external code in digits is also another record's id, then the partner's own code wins", async () => {
      const other = (await createContactReference(partnerA, contactBody("DIGITS-OWNER"))).result;
      const coded = (await createContactReference(partnerA, contactBody(String(other.id), "coded@acme.test"))).result;
      expect((await resolve(partnerA.clientId, "external", String(other.id)))?.id).toBe(coded.id);
      expect((await resolve(partnerA.clientId, "internal", String(other.id)))?.id).toBe(other.id);
    });
  });

  describe("packaging references", () => {
    let water: PackagingJson;
    let oil: PackagingJson;
    let soap: PackagingJson;
    beforeAll(async () => {
      const waterProduct = await createProduct(t, { label: "Sparkling water", taxes: [VAT_20, ECO_TAX] });
      const oilProduct = await createProduct(t, { label: "Olive oil", taxes: [VAT_20] });
      water = await createPackaging(t, waterProduct.id, { name: "Pack of 6", unit: "bottle", unit_factor: 6 });
      oil = await createPackaging(t, oilProduct.id, { name: "Can 5 L", unit: "litre", unit_factor: 5 });
      soap = await createPackaging(t, oilProduct.id, { name: "Can 1 L", unit: "litre", unit_factor: 1 });
    });

    it("when an admin creates a packaging reference without a label, then it is 201 labelled with the product's label", async () => {
      const { result, meta } = await callWithMeta<PackagingReferenceJson>(
        t,
        "references.createPackagingReference",
        {
          clientId: partnerA.clientId,
          externalReference: "P-WATER-6",
          packagingId: water.id,
        },
        ADMIN,
      );
      expect(meta.$statusCode).toBe(201);
      expect(meta.$location).toBe(`/api/v1/packaging_references/${result.id}`);
      expect(result).toEqual({
        id: expect.any(Number),
        externalReference: "P-WATER-6",
        active: true,
        label: "Sparkling water",
        packaging: water,
      });
      expect(await t.call("references.getPackagingReference", { id: result.id }, partnerA)).toEqual(result);
    });

    it("when the packaging does not exist, then it is 422 naming packagingId", async () => {
      await expect(
        createPackagingReference({ clientId: partnerA.clientId, externalReference: "P-NONE", packagingId: 999999 }),
      ).rejects.toMatchObject({ code: 422, data: { errors: [{ path: "packagingId" }] } });
    });

    it("when the partner already uses the external reference, then it is 409; another partner may use it", async () => {
      await createPackagingReference({ clientId: partnerA.clientId, externalReference: "P-DUP", packagingId: oil.id });
      await expect(
        createPackagingReference({ clientId: partnerA.clientId, externalReference: "P-DUP", packagingId: soap.id }),
      ).rejects.toMatchObject({ code: 409, type: "CONFLICT" });
      await expect(
        createPackagingReference({ clientId: partnerB.clientId, externalReference: "P-DUP", packagingId: soap.id }),
      ).resolves.toMatchObject({ externalReference: "P-DUP" });
    });

    it("when a partner lists or reads packaging references, then only its own are visible", async () => {
      const mine = await createPackagingReference({
        clientId: partnerA.clientId,
        externalReference: "P-LIST",
        packagingId: oil.id,
        label: "Our oil",
      });
      const theirs = await createPackagingReference({
        clientId: partnerB.clientId,
        externalReference: "P-LIST",
        packagingId: oil.id,
      });
      const page = await t.call<Page<PackagingReferenceJson>>(
        "references.listPackagingReferences",
        { limit: 500 },
        partnerA,
      );
      expect(page.items).toContainEqual(mine);
      expect(page.items.map((r) => r.id)).not.toContain(theirs.id);
      expect(mine.label).toBe("Our oil");
      await expect(t.call("references.getPackagingReference", { id: theirs.id }, partnerA)).rejects.toMatchObject({
        code: 404,
      });
    });

    it("when a non-admin creates a packaging reference, then it is forbidden", async () => {
      await expect(
        t.call(
          "references.createPackagingReference",
          { clientId: partnerA.clientId, externalReference: "P-X", packagingId: oil.id },
          partnerA,
        ),
      ).rejects.toMatchObject({ code: 403 });
    });

    it("when resolving a mix of lookups, then the answers align with the refs, unknown null and inactive flagged, in bounded work", async () => {
      const partner = principal("partner", ["partner"]);
      const other = principal("partner", ["partner"]);
      const w = await createPackagingReference({
        clientId: partner.clientId,
        externalReference: "R-WATER",
        packagingId: water.id,
      });
      const o = await createPackagingReference({
        clientId: partner.clientId,
        externalReference: "R-OIL",
        packagingId: oil.id,
      });
      const off = await createPackagingReference({
        clientId: partner.clientId,
        externalReference: "R-OFF",
        packagingId: soap.id,
        active: false,
      });
      const foreign = await createPackagingReference({
        clientId: other.clientId,
        externalReference: "R-FOREIGN",
        packagingId: water.id,
      });
      const refs = [
        { by: "internal", value: String(w.id) },
        { by: "external", value: "R-OIL" },
        { by: "external", value: "R-UNKNOWN" },
        { by: "external", value: "R-OFF" },
        { by: "external", value: String(w.id) },
        { by: "internal", value: foreign.id },
        { by: "external", value: "R-FOREIGN" },
        { by: "internal", value: "R-WATER" },
      ];
      const { result, statements } = await countQueries(t, () =>
        t.call<(PackagingReferenceJson | null)[]>(
          "references.resolvePackagings",
          { clientId: partner.clientId, refs },
          null,
        ),
      );
      expect(result).toEqual([w, o, null, { ...off, active: false }, w, null, null, null]);
      // One query for the references, then catalogue.packagingsByIds: packagings and taxes.
      expect(statements).toHaveLength(3);
    });

    it("when resolving 300 lookups, then the work is the same as for a few", async () => {
      const partner = principal("partner", ["partner"]);
      const made = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          createPackagingReference({
            clientId: partner.clientId,
            externalReference: `BULK-${i}`,
            packagingId: [water, oil, soap][i % 3].id,
          }),
        ),
      );
      const refs = Array.from({ length: 300 }, (_, i) => ({ by: "external", value: `BULK-${i}` }));
      const { result, statements } = await countQueries(t, () =>
        t.call<(PackagingReferenceJson | null)[]>(
          "references.resolvePackagings",
          { clientId: partner.clientId, refs },
          null,
        ),
      );
      expect(result.slice(0, 20).map((r) => r?.id)).toEqual(made.map((m) => m.id));
      expect(result.slice(20)).toEqual(refs.slice(20).map(() => null));
      // One query for the references, and at most the two of catalogue.packagingsByIds.
      expect(statements.length).toBeLessThanOrEqual(3);
    });

    it("when the same packagings are resolved again, then catalogue is not asked again", async () => {
      const partner = principal("partner", ["partner"]);
      await createPackagingReference({ clientId: partner.clientId, externalReference: "AGAIN-1", packagingId: oil.id });
      await createPackagingReference({
        clientId: partner.clientId,
        externalReference: "AGAIN-2",
        packagingId: soap.id,
      });
      const refs = [
        { by: "external", value: "AGAIN-1" },
        { by: "external", value: "AGAIN-2" },
      ];
      const resolve = () =>
        t.call<(PackagingReferenceJson | null)[]>(
          "references.resolvePackagings",
          { clientId: partner.clientId, refs },
          null,
        );
      const first = await resolve();
      expect(first.map((r) => r?.packaging.id)).toEqual([oil.id, soap.id]);
      const again = await countQueries(t, resolve);
      expect(again.result).toEqual(first);
      // The references query only: the packagings came from the cache.
      expect(again.statements).toHaveLength(1);
    });

    it("when resolving no lookups, then the answer is empty", async () => {
      await expect(
        t.call("references.resolvePackagings", { clientId: partnerA.clientId, refs: [] }, null),
      ).resolves.toEqual([]);
    });
  });
});

describe("references migrations", () => {
  it("when migrated up, down and up again, then the tables (outbox and its retention job's runs included) come and go and come back", async () => {
    const trip = await migrationRoundTrip("references", migrations);
    const tables = ["contact_references", "job_runs", "outbox", "packaging_references"];
    expect(trip).toEqual({ afterUp: tables, afterDown: [], afterUpAgain: tables });
  });
});
