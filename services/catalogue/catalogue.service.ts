/**
 * catalogue: products, their taxes and their packagings. Clients with the `catalogue` scope
 * list and read them; admins create them; orders and references read packagings in bulk
 * through `catalogue.packagingsByIds`.
 */
import type { RequestContext } from "../../shared/security/auth";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { conflictOnUnique } from "../../shared/database/database-errors";
import { ConflictError, InvalidInputError, NotFoundError, unknownReference } from "../../shared/errors";
import { toPage } from "../../shared/http/paging";
import { respondCreated } from "../../shared/http/responses";
import {
  createPackagingParams,
  createProductParams,
  idParams,
  listParams,
  packagingsByIdsParams,
  type CreatePackagingParams,
  type CreateProductParams,
  type IdParams,
  type ListParams,
  type PackagingsByIdsParams,
  type TaxInput,
} from "./catalogue.params";
import * as repo from "./catalogue.repository";
import {
  presentPackaging,
  presentProduct,
  taxesByProduct,
  type Packaging,
  type Product,
} from "./catalogue.representation";
import { migrations } from "./migrations";

interface CatalogueMethods {
  packagingsOf(rows: repo.PackagingRow[]): Promise<Packaging[]>;
  productsOf(rows: repo.ProductRow[]): Promise<Product[]>;
  packagingById(id: number): Promise<Packaging>;
  productById(id: number): Promise<Product>;
}

/** The same tax twice on one product is a mistake in the request, not something to merge. */
function rejectRepeatedTaxes(taxes: TaxInput[]): void {
  const seen = new Set<string>();
  const errors = taxes.flatMap((t, i) => {
    const key = JSON.stringify([t.name, t.rate, t.vat]);
    if (seen.has(key)) return [{ path: `taxes[${i}]`, message: "This tax is already listed for the product." }];
    seen.add(key);
    return [];
  });
  if (errors.length > 0) throw new InvalidInputError(errors);
}

const catalogueService: DbServiceSchema<CatalogueMethods> = {
  name: "catalogue",
  mixins: [databaseMixin("catalogue", migrations)],

  actions: {
    listPackagings: {
      visibility: "published",
      scope: "catalogue",
      summary: "Packagings, each with its product and the product's taxes.",
      params: listParams,
      async handler(ctx: RequestContext<ListParams>) {
        const { rows, nextCursor } = await repo.listPackagings(this.db, ctx.params);
        return toPage(await this.packagingsOf(rows), nextCursor);
      },
    },

    getPackaging: {
      visibility: "published",
      scope: "catalogue",
      summary: "One packaging with its product and the product's taxes.",
      params: idParams,
      handler(ctx: RequestContext<IdParams>) {
        return this.packagingById(ctx.params.id);
      },
    },

    createPackaging: {
      visibility: "published",
      scope: "admin",
      summary: "Create a packaging of an existing product.",
      params: createPackagingParams,
      async handler(ctx: RequestContext<CreatePackagingParams>) {
        const p = ctx.params;
        const [product] = await repo.findProducts(this.db, [p.productId]);
        if (!product) throw unknownReference("productId", "product", p.productId);
        const id = await repo.insertPackaging(this.db, {
          productId: p.productId,
          name: p.name,
          unit: p.unit,
          unitFactor: p.unit_factor,
        });
        respondCreated(ctx, "packagings", id);
        return this.packagingById(id);
      },
    },

    listProducts: {
      visibility: "published",
      scope: "catalogue",
      summary: "Products, each with its taxes.",
      params: listParams,
      async handler(ctx: RequestContext<ListParams>) {
        const { rows, nextCursor } = await repo.listProducts(this.db, ctx.params);
        return toPage(await this.productsOf(rows), nextCursor);
      },
    },

    getProduct: {
      visibility: "published",
      scope: "catalogue",
      summary: "One product with its taxes.",
      params: idParams,
      handler(ctx: RequestContext<IdParams>) {
        return this.productById(ctx.params.id);
      },
    },

    createProduct: {
      visibility: "published",
      scope: "admin",
      summary: "Create a product; its taxes are found by name, rate and kind, or created.",
      params: createProductParams,
      async handler(ctx: RequestContext<CreateProductParams>) {
        const { code, label, taxes = [] } = ctx.params;
        rejectRepeatedTaxes(taxes);
        const id = await this.db.transaction(async (trx) => {
          const taxIds = await repo.upsertTaxes(trx, taxes);
          const productId = await conflictOnUnique(
            repo.insertProduct(trx, { code, label }),
            () => new ConflictError(`A product with code ${JSON.stringify(code)} already exists.`, { code }),
          );
          await repo.linkProductTaxes(trx, productId, taxIds);
          return productId;
        });
        respondCreated(ctx, "products", id);
        return this.productById(id);
      },
    },

    /** Internal: the packagings with these ids (missing ones are simply absent), in two queries. */
    packagingsByIds: {
      visibility: "public",
      params: packagingsByIdsParams,
      async handler(ctx: RequestContext<PackagingsByIdsParams>): Promise<Packaging[]> {
        const ids = [...new Set(ctx.params.ids)];
        if (ids.length === 0) return [];
        return this.packagingsOf(await repo.findPackagings(this.db, ids));
      },
    },
  },

  methods: {
    async packagingsOf(rows: repo.PackagingRow[]): Promise<Packaging[]> {
      const productIds = [...new Set(rows.map((r) => r.product_id))];
      const taxes = taxesByProduct(await repo.findProductTaxes(this.db, productIds));
      return rows.map((r) => presentPackaging(r, taxes));
    },

    async productsOf(rows: repo.ProductRow[]): Promise<Product[]> {
      const taxes = taxesByProduct(
        await repo.findProductTaxes(
          this.db,
          rows.map((r) => r.id),
        ),
      );
      return rows.map((r) => presentProduct(r, taxes));
    },

    async packagingById(id: number): Promise<Packaging> {
      const [packaging] = await this.packagingsOf(await repo.findPackagings(this.db, [id]));
      if (!packaging) throw new NotFoundError("packaging", id);
      return packaging;
    },

    async productById(id: number): Promise<Product> {
      const [product] = await this.productsOf(await repo.findProducts(this.db, [id]));
      if (!product) throw new NotFoundError("product", id);
      return product;
    },
  },
};

export default catalogueService;
