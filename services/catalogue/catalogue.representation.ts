/** The JSON shapes of catalogue entities, as GET /packagings/{id} and GET /products/{id} return them. */
import type { PackagingRow, ProductRow, ProductTaxRow } from "./catalogue.repository";

export interface Tax {
  name: string;
  rate: number;
  vat: boolean;
}

export interface Product {
  id: number;
  code: string;
  label: string;
  taxes: Tax[];
  createdAt: string;
}

/** `unit_factor` is spelled as the interface spells it (§2.7). */
export interface Packaging {
  id: number;
  name: string;
  unit: string;
  unit_factor: number;
  product: { id: number; code: string; label: string; taxes: Tax[] };
}

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
  return { id: row.id, code: row.code, label: row.label, taxes: taxes.get(row.id) ?? [], createdAt: row.created_at.toISOString() };
}

export function presentPackaging(row: PackagingRow, taxes: Map<number, Tax[]>): Packaging {
  return {
    id: row.id,
    name: row.name,
    unit: row.unit,
    unit_factor: row.unit_factor,
    product: { id: row.product_id, code: row.product_code, label: row.product_label, taxes: taxes.get(row.product_id) ?? [] },
  };
}
