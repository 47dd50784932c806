import { migrations } from "../../services/catalogue/migrations";
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
  type ProductJson,
} from "../helpers/catalogue-fixtures";
import { migrationRoundTrip } from "../helpers/migration-roundtrip";

interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

describe("catalogue service", () => {
  let t: TestBroker;
  const backoffice = principal("backoffice", ["crm", "catalogue", "orders:write"]);
  beforeAll(async () => {
    t = await startTestBroker({ services: ["crm", "catalogue", "references"] });
  });
  afterAll(() => t.stop());

  describe("products and packagings", () => {
    it("when an admin creates a product with taxes, then it answers 201 with a Location and the taxes in their order", async () => {
      const { result, meta } = await callWithMeta<ProductJson>(
        t,
        "catalogue.createProduct",
        {
          code: "COF-1KG",
          label: "Coffee beans 1 kg",
          taxes: [VAT_20, ECO_TAX],
        },
        ADMIN,
      );
      expect(meta.$statusCode).toBe(201);
      expect(meta.$location).toBe(`/api/v1/products/${result.id}`);
      expect(result).toEqual({
        id: expect.any(Number),
        code: "COF-1KG",
        label: "Coffee beans 1 kg",
        taxes: [VAT_20, ECO_TAX],
        createdAt: expect.any(String),
      });
      expect(await t.call("catalogue.getProduct", { id: result.id }, backoffice)).toEqual(result);
    });

    it("when an admin creates a packaging, then the catalogue lists it with its product and the product's taxes", async () => {
      const product = await createProduct(t, {
        label: "Sparkling water",
        taxes: [{ name: "VAT", rate: 5.5, vat: true }, ECO_TAX],
      });
      const { result, meta } = await callWithMeta<PackagingJson>(
        t,
        "catalogue.createPackaging",
        {
          productId: product.id,
          name: "Pack of 6 x 1.5 L",
          unit: "bottle",
          unit_factor: 6,
        },
        ADMIN,
      );
      expect(meta.$statusCode).toBe(201);
      expect(meta.$location).toBe(`/api/v1/packagings/${result.id}`);
      const expected: PackagingJson = {
        id: result.id,
        name: "Pack of 6 x 1.5 L",
        unit: "bottle",
        unit_factor: 6,
        product: {
          id: product.id,
          code: product.code,
          label: "Sparkling water",
          taxes: [{ name: "VAT", rate: 5.5, vat: true }, ECO_TAX],
        },
      };
      expect(result).toEqual(expected);
      const listed = await t.call<Page<PackagingJson>>("catalogue.listPackagings", { limit: 500 }, backoffice);
      expect(listed.items).toContainEqual(expected);
      expect(await t.call("catalogue.getPackaging", { id: String(result.id) }, backoffice)).toEqual(expected);
      const products = await t.call<Page<ProductJson>>("catalogue.listProducts", { limit: 500 }, backoffice);
      expect(products.items).toContainEqual(product);
    });

    it("when a packaging has a fractional unit factor, then it comes back as the same number", async () => {
      const product = await createProduct(t);
      const packaging = await createPackaging(t, product.id, {
        name: "Bottle 750 ml",
        unit: "litre",
        unit_factor: 0.75,
      });
      expect(packaging.unit_factor).toBe(0.75);
    });

    it("when two products name the same tax, then they share one tax row", async () => {
      const tax = { name: "Sugar levy", rate: 7.25, vat: false };
      await createProduct(t, { taxes: [tax] });
      const second = await createProduct(t, { taxes: [VAT_20, tax] });
      expect(second.taxes).toEqual([VAT_20, tax]);
      const rows = await databaseOf(t).withSchema("catalogue").table("taxes").where({ name: "Sugar levy" });
      expect(rows).toHaveLength(1);
    });

    it("when the list is longer than the limit, then pages follow each other by cursor without overlap", async () => {
      for (let i = 0; i < 3; i++) await createProduct(t);
      const first = await t.call<Page<ProductJson>>("catalogue.listProducts", { limit: 2 }, backoffice);
      expect(first.items).toHaveLength(2);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await t.call<Page<ProductJson>>(
        "catalogue.listProducts",
        { limit: 2, cursor: first.nextCursor },
        backoffice,
      );
      expect(second.items[0].id).toBeGreaterThan(first.items[1].id);
    });
  });

  describe("refusals", () => {
    it("when the caller lacks the catalogue scope, then listing and reading are forbidden", async () => {
      const partner = principal("partner", ["partner"]);
      await expect(t.call("catalogue.listPackagings", {}, partner)).rejects.toMatchObject({
        code: 403,
        type: "FORBIDDEN",
      });
      await expect(t.call("catalogue.getProduct", { id: 1 }, partner)).rejects.toMatchObject({ code: 403 });
    });

    it("when a non-admin creates a product or a packaging, then it is forbidden", async () => {
      await expect(t.call("catalogue.createProduct", { code: "X-1", label: "X" }, backoffice)).rejects.toMatchObject({
        code: 403,
        data: { requiredScope: "admin" },
      });
      await expect(
        t.call("catalogue.createPackaging", { productId: 1, name: "n", unit: "u", unit_factor: 1 }, backoffice),
      ).rejects.toMatchObject({ code: 403 });
    });

    it("when the product does not exist, then creating a packaging is 422 naming productId", async () => {
      await expect(
        t.call("catalogue.createPackaging", { productId: 999999, name: "Box", unit: "box", unit_factor: 1 }),
      ).rejects.toMatchObject({ code: 422, type: "VALIDATION_FAILED", data: { errors: [{ path: "productId" }] } });
    });

    it("when a product code is taken, then creating another product with it is 409 and nothing is half-created", async () => {
      await t.call("catalogue.createProduct", { code: "DUP-1", label: "First" });
      await expect(
        t.call("catalogue.createProduct", {
          code: "DUP-1",
          label: "Second",
          taxes: [{ name: "Only here", rate: 3, vat: true }],
        }),
      ).rejects.toMatchObject({ code: 409, type: "CONFLICT" });
      const orphanTax = await databaseOf(t).withSchema("catalogue").table("taxes").where({ name: "Only here" });
      expect(orphanTax).toHaveLength(0);
    });

    it("when a product lists the same tax twice, then it is 422 naming the repeated entry", async () => {
      await expect(
        t.call("catalogue.createProduct", { code: "REP-1", label: "Rep", taxes: [VAT_20, ECO_TAX, VAT_20] }),
      ).rejects.toMatchObject({ code: 422, data: { errors: [{ path: "taxes[2]" }] } });
    });

    it("when a tax carries an unknown field, then validation rejects it", async () => {
      await expect(
        t.call("catalogue.createProduct", { code: "STR-1", label: "S", taxes: [{ ...VAT_20, country: "FR" }] }),
      ).rejects.toMatchObject({ code: 422, type: "VALIDATION_ERROR" });
    });

    it("when the packaging does not exist, then reading it is 404", async () => {
      await expect(t.call("catalogue.getPackaging", { id: 999999 }, backoffice)).rejects.toMatchObject({
        code: 404,
        type: "NOT_FOUND",
      });
    });
  });

  describe("packagingsByIds (internal)", () => {
    it("when asked for 300 ids, most unknown, then it answers the existing packagings only, in a fixed number of queries", async () => {
      const product = await createProduct(t, { taxes: [VAT_20, ECO_TAX] });
      const made = await Promise.all(
        [1, 2, 3].map((n) => createPackaging(t, product.id, { name: `Crate ${n}`, unit_factor: n })),
      );
      const unknown = Array.from({ length: 297 }, (_, i) => 5_000_000 + i);
      const ids = [...unknown.slice(0, 150), ...made.map((p) => p.id), ...unknown.slice(150)];
      expect(ids).toHaveLength(300);
      const { result, statements } = await countQueries(t, () =>
        t.call<PackagingJson[]>("catalogue.packagingsByIds", { ids }, null),
      );
      expect(result.map((p) => p.id).sort((a, b) => a - b)).toEqual(made.map((p) => p.id).sort((a, b) => a - b));
      expect(result.filter((p) => p.product.taxes.length !== 2)).toEqual([]);
      // The packagings with their products in one query, all their taxes in another.
      expect(statements).toHaveLength(2);
    });

    it("when asked for no ids, then it answers an empty list without a query", async () => {
      const { result, statements } = await countQueries(t, () =>
        t.call("catalogue.packagingsByIds", { ids: [] }, null),
      );
      expect(result).toEqual([]);
      expect(statements).toHaveLength(0);
    });
  });
});

describe("catalogue migrations", () => {
  it("when migrated up, down and up again, then the tables come and go and come back", async () => {
    const trip = await migrationRoundTrip("catalogue", migrations);
    const tables = ["packagings", "product_taxes", "products", "taxes"];
    expect(trip).toEqual({ afterUp: tables, afterDown: [], afterUpAgain: tables });
  });
});
