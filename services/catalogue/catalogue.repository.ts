/**
 * The only file of the catalogue service that touches knex. Every read is a fixed number of
 * queries whatever the number of rows: packagings (or products) in one, their taxes in one.
 */
import type { Db } from "../../shared/database/db";
import { fetchPage, type PageQuery } from "../../shared/http/paging";
import type { TaxInput } from "./catalogue.params";

const S = "catalogue";

export interface ProductRow {
  id: number;
  code: string;
  label: string;
  created_at: Date;
}

export interface PackagingRow {
  id: number;
  product_id: number;
  name: string;
  unit: string;
  unit_factor: number;
  created_at: Date;
  product_code: string;
  product_label: string;
}

export interface ProductTaxRow {
  product_id: number;
  name: string;
  rate: number;
  vat: boolean;
}

function packagingsQuery(db: Db) {
  return db
    .withSchema(S)
    .table("packagings as g")
    .join("products as p", "p.id", "g.product_id")
    .select("g.*", "p.code as product_code", "p.label as product_label");
}

export async function listPackagings(db: Db, page: PageQuery) {
  return fetchPage<PackagingRow & Record<string, unknown>>(packagingsQuery(db), page, "g.id", (r) => r.id);
}

export async function findPackagings(db: Db, ids: number[]): Promise<PackagingRow[]> {
  return packagingsQuery(db).whereIn("g.id", ids);
}

export async function listProducts(db: Db, page: PageQuery) {
  return fetchPage<ProductRow & Record<string, unknown>>(
    db.withSchema(S).table("products").select("*"),
    page,
    "id",
    (r) => r.id,
  );
}

export async function findProducts(db: Db, ids: number[]): Promise<ProductRow[]> {
  return db.withSchema(S).table("products").whereIn("id", ids);
}

/** The taxes of these products, each product's in the order they were given. */
export async function findProductTaxes(db: Db, productIds: number[]): Promise<ProductTaxRow[]> {
  if (productIds.length === 0) return [];
  return db
    .withSchema(S)
    .table("product_taxes as pt")
    .join("taxes as t", "t.id", "pt.tax_id")
    .whereIn("pt.product_id", productIds)
    .orderBy([{ column: "pt.product_id" }, { column: "pt.position" }])
    .select("pt.product_id", "t.name", "t.rate", "t.vat");
}

/** The ids of these taxes (same order), each created if missing; safe under concurrency. */
export async function upsertTaxes(db: Db, taxes: TaxInput[]): Promise<number[]> {
  if (taxes.length === 0) return [];
  await db
    .withSchema(S)
    .table("taxes")
    .insert(taxes.map((t) => ({ name: t.name, rate: t.rate, vat: t.vat })))
    .onConflict(["name", "rate", "vat"])
    .ignore();
  const rows = (await db
    .withSchema(S)
    .table("taxes")
    .whereIn(
      ["name", "rate", "vat"],
      taxes.map((t) => [t.name, t.rate, t.vat]),
    )
    .select("id", "name", "rate", "vat")) as ({ id: number } & TaxInput)[];
  return taxes.map((t) => {
    const row = rows.find((r) => r.name === t.name && Number(r.rate) === t.rate && r.vat === t.vat);
    if (!row) throw new Error(`tax ${t.name} ${t.rate} ${t.vat} vanished after its upsert`);
    return row.id;
  });
}

export async function insertProduct(db: Db, p: { code: string; label: string }): Promise<number> {
  const [row] = await db
    .withSchema(S)
    .table("products")
    .insert({ code: p.code, label: p.label })
    .returning<{ id: number }[]>("id");
  return row.id;
}

export async function linkProductTaxes(db: Db, productId: number, taxIds: number[]): Promise<void> {
  if (taxIds.length === 0) return;
  await db
    .withSchema(S)
    .table("product_taxes")
    .insert(taxIds.map((taxId, position) => ({ product_id: productId, tax_id: taxId, position })));
}

export async function insertPackaging(
  db: Db,
  g: { productId: number; name: string; unit: string; unitFactor: number },
): Promise<number> {
  const [row] = await db
    .withSchema(S)
    .table("packagings")
    .insert({ product_id: g.productId, name: g.name, unit: g.unit, unit_factor: g.unitFactor })
    .returning<{ id: number }[]>("id");
  return row.id;
}
