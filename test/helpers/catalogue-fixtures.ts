/**
 * Catalogue data for tests, created through the admin actions (as an admin client would), and
 * a counter of the SQL queries an action runs (to prove a bulk action stays bounded).
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import type { RequestMeta } from "../../shared/security/auth";
import type { TestBroker } from "./broker";

export interface TaxJson {
  name: string;
  rate: number;
  vat: boolean;
}
export interface ProductJson {
  id: number;
  code: string;
  label: string;
  taxes: TaxJson[];
  createdAt: string;
}
export interface PackagingJson {
  id: number;
  name: string;
  unit: string;
  unit_factor: number;
  product: { id: number; code: string; label: string; taxes: TaxJson[] };
}

export const VAT_20: TaxJson = { name: "VAT", rate: 20, vat: true };
export const ECO_TAX: TaxJson = { name: "Eco-tax", rate: 0.5, vat: false };

let nextCode = 1;

/** A product with a code no other test uses. */
export function createProduct(t: TestBroker, fields: { label?: string; taxes?: TaxJson[] } = {}): Promise<ProductJson> {
  const code = `T-${Date.now().toString(36)}-${nextCode++}`;
  return t.call<ProductJson>("catalogue.createProduct", {
    code,
    label: fields.label ?? `Product ${code}`,
    taxes: fields.taxes ?? [VAT_20],
  });
}

export function createPackaging(
  t: TestBroker,
  productId: number,
  fields: { name?: string; unit?: string; unit_factor?: number } = {},
): Promise<PackagingJson> {
  return t.call<PackagingJson>("catalogue.createPackaging", {
    productId,
    name: fields.name ?? "Box of 6",
    unit: fields.unit ?? "bottle",
    unit_factor: fields.unit_factor ?? 6,
  });
}

/** Calls an action and also returns the meta it set ($statusCode, $location). */
export async function callWithMeta<T>(
  t: TestBroker,
  action: string,
  params: object,
  client: RequestMeta["client"],
): Promise<{ result: T; meta: RequestMeta }> {
  const meta: RequestMeta = { client };
  const result = await t.broker.call<T, object>(action, params, { meta });
  return { result, meta };
}

/** The knex the test broker's services share (one per database URL in a process). */
export function databaseOf(t: TestBroker): Knex {
  return openDatabase(t.database.url);
}

/**
 * The statements of the broker's background machinery (the outbox relays, retention and the
 * periodic jobs' claims), which may run on the same pool while `run` does: not counted. A word
 * match, not a quoted name: raw statements name the table after `??.` (`"catalogue".outbox`).
 */
const BACKGROUND_STATEMENT = /\b(outbox|job_runs)\b/;

/**
 * The SQL statements `run` makes on the test broker's database; a test compares their count,
 * and a failure shows which they were.
 */
export async function countQueries<T>(
  t: TestBroker,
  run: () => Promise<T>,
): Promise<{ result: T; statements: string[] }> {
  const db = databaseOf(t);
  const statements: string[] = [];
  const onQuery = (query: { sql?: string }) => {
    const sql = query.sql ?? "";
    if (!BACKGROUND_STATEMENT.test(sql)) statements.push(sql);
  };
  db.on("query", onQuery);
  try {
    const result = await run();
    return { result, statements };
  } finally {
    db.off("query", onQuery);
  }
}
