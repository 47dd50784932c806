/** The JSON shapes of catalogue entities, as GET /packagings/{id} and GET /products/{id} return them. */
import type { FromJsonSchema } from "../../shared/schema-types";
import type * as Schemas from "./catalogue.openapi";
import type { PackagingRow, ProductRow, ProductTaxRow } from "./catalogue.repository";

/** Each type is read off its JSON Schema in catalogue.openapi.ts, so the document and the code agree. */
export type Product = FromJsonSchema<typeof Schemas.Product>;
export type Tax = Product["taxes"][number];
/** `unit_factor` is spelled as the interface spells it (§2.7). */
export type Packaging = FromJsonSchema<typeof Schemas.Packaging>;

/** Tax rows of several products → each product's taxes, in their given order. */
export function taxesByProduct(rows: ProductTaxRow[]): Map<number, Tax[]> {
  const byProduct = new Map<number, Tax[]>();
  for (const r of rows) {
    const taxes = byProduct.get(r.product_id) ?? [];
    taxes.push({ name: r.name, rate: r.rate, vat: r.vat });
    byProduct.set(r.product_id, taxes);
  }
  return byProduct;
}

export function presentProduct(row: ProductRow, taxes: Map<number, Tax[]>): Product {
  return {
    id: row.id,
    code: row.code,
    label: row.label,
    taxes: taxes.get(row.id) ?? [],
    createdAt: row.created_at.toISOString(),
  };
}

export function presentPackaging(row: PackagingRow, taxes: Map<number, Tax[]>): Packaging {
  return {
    id: row.id,
    name: row.name,
    unit: row.unit,
    unit_factor: row.unit_factor,
    product: {
      id: row.product_id,
      code: row.product_code,
      label: row.product_label,
      taxes: taxes.get(row.product_id) ?? [],
    },
  };
}
