/**
 * The only file of the references service that touches knex. Every query is scoped to one
 * partner (`client_id`): a partner's references are invisible to every other partner.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { nextVersion } from "../../shared/database/version-column";
import { fetchPage, type PageQuery } from "../../shared/http/paging";

const S = "references";
type Table = "contact_references" | "packaging_references";

export interface ContactReferenceRow {
  id: number;
  client_id: number;
  external_reference: string;
  contact_id: number;
  /** 1 when created, one more each time it is re-pointed: its ETag (shared/http/conditional.ts). */
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface PackagingReferenceRow {
  id: number;
  client_id: number;
  external_reference: string;
  packaging_id: number;
  label: string;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The client's rows of one table, typed as `Row` (knex types a query's rows `any`). */
function ofClient<Row extends object>(db: Db, table: Table, clientId: number) {
  return db.withSchema(S).table<Row, Row[]>(table).where("client_id", clientId);
}

async function listOf<Row extends { id: number }>(db: Db, table: Table, clientId: number, page: PageQuery) {
  return fetchPage<Row & Record<string, unknown>>(
    ofClient<Row>(db, table, clientId).select("*"),
    page,
    "id",
    (r) => r.id,
  );
}

async function findOf<Row extends object>(
  db: Db,
  table: Table,
  clientId: number,
  id: number,
): Promise<Row | undefined> {
  return ofClient<Row>(db, table, clientId).where("id", id).first();
}

/** The client's records whose id or external reference is among these: one query. */
async function findMatchingOf<Row extends object>(
  db: Db,
  table: Table,
  clientId: number,
  keys: { ids: number[]; externalReferences: string[] },
): Promise<Row[]> {
  if (keys.ids.length === 0 && keys.externalReferences.length === 0) return [];
  const rows = await ofClient<Row>(db, table, clientId).where((q) => {
    if (keys.ids.length > 0) q.orWhereIn("id", keys.ids);
    if (keys.externalReferences.length > 0) q.orWhereIn("external_reference", keys.externalReferences);
  });
  // knex's resolved row type does not simplify back to a type parameter.
  return rows as Row[];
}

export const listContactReferences = (db: Db, clientId: number, page: PageQuery) =>
  listOf<ContactReferenceRow>(db, "contact_references", clientId, page);
export const findContactReference = (db: Db, clientId: number, id: number) =>
  findOf<ContactReferenceRow>(db, "contact_references", clientId, id);
export const findMatchingContactReferences = (
  db: Db,
  clientId: number,
  keys: { ids: number[]; externalReferences: string[] },
) => findMatchingOf<ContactReferenceRow>(db, "contact_references", clientId, keys);

export const listPackagingReferences = (db: Db, clientId: number, page: PageQuery) =>
  listOf<PackagingReferenceRow>(db, "packaging_references", clientId, page);
export const findPackagingReference = (db: Db, clientId: number, id: number) =>
  findOf<PackagingReferenceRow>(db, "packaging_references", clientId, id);
export const findMatchingPackagingReferences = (
  db: Db,
  clientId: number,
  keys: { ids: number[]; externalReferences: string[] },
) => findMatchingOf<PackagingReferenceRow>(db, "packaging_references", clientId, keys);

export interface ContactReferenceKey {
  clientId: number;
  externalReference: string;
}

/** Inserts the reference unless the partner already has one with this code (then undefined). */
export async function insertContactReference(
  db: Db,
  key: ContactReferenceKey,
  contactId: number,
): Promise<ContactReferenceRow | undefined> {
  const [row] = await db
    .withSchema(S)
    .table("contact_references")
    .insert({ client_id: key.clientId, external_reference: key.externalReference, contact_id: contactId })
    .onConflict(["client_id", "external_reference"])
    .ignore()
    .returning<ContactReferenceRow[]>("*");
  return row;
}

const byKey = (db: Db, key: ContactReferenceKey) =>
  db
    .withSchema(S)
    .table<ContactReferenceRow, ContactReferenceRow[]>("contact_references")
    .where({ client_id: key.clientId, external_reference: key.externalReference });

export async function findContactReferenceByKey(
  db: Db,
  key: ContactReferenceKey,
): Promise<ContactReferenceRow | undefined> {
  return byKey(db, key).first();
}

/** The partner's reference with this code, locked until `trx` ends: its version cannot move before the change. */
export async function lockContactReference(
  trx: Knex.Transaction,
  key: ContactReferenceKey,
): Promise<ContactReferenceRow | undefined> {
  return byKey(trx, key).forUpdate().first();
}

/** Points the partner's existing reference at this contact, at its next version. */
export async function repointContactReference(
  db: Db,
  key: ContactReferenceKey,
  contactId: number,
): Promise<ContactReferenceRow> {
  const [row] = await byKey(db, key)
    .update({ contact_id: contactId, version: nextVersion(db), updated_at: db.fn.now() })
    .returning<ContactReferenceRow[]>("*");
  if (!row) throw new Error(`contact reference ${JSON.stringify(key)} vanished between its insert and its update`);
  return row;
}

export async function insertPackagingReference(
  db: Db,
  r: { clientId: number; externalReference: string; packagingId: number; label: string; active: boolean },
): Promise<PackagingReferenceRow> {
  const [row] = await db
    .withSchema(S)
    .table("packaging_references")
    .insert({
      client_id: r.clientId,
      external_reference: r.externalReference,
      packaging_id: r.packagingId,
      label: r.label,
      active: r.active,
    })
    .returning<PackagingReferenceRow[]>("*");
  return row;
}
