/**
 * The only file of the clients service that touches knex. Functions take a Db (knex or a
 * transaction) and return plain rows.
 */
import type { Db } from "../../shared/database/db";
import { fetchPage, type PageQuery } from "../../shared/http/paging";

const S = "clients";

export interface ClientRow {
  id: number;
  name: string;
  kind: string;
  scopes: string[];
  webhook_events: string[];
  created_at: Date;
  revoked_at: Date | null;
}

export interface NewClient {
  name: string;
  kind: string;
  scopes: string[];
  webhookEvents: string[];
}

export async function insertClient(db: Db, c: NewClient): Promise<ClientRow> {
  const [row] = await db
    .withSchema(S)
    .table("clients")
    .insert({ name: c.name, kind: c.kind, scopes: c.scopes, webhook_events: c.webhookEvents })
    .returning<ClientRow[]>("*");
  return row;
}

export async function insertApiKey(
  db: Db,
  clientId: number,
  k: { lookup: string; hash: string; hint: string },
): Promise<void> {
  await db
    .withSchema(S)
    .table("api_keys")
    .insert({ client_id: clientId, ...k })
    .onConflict("hash")
    .ignore();
}

export async function findClient(db: Db, id: number): Promise<ClientRow | undefined> {
  return db.withSchema(S).table<ClientRow, ClientRow[]>("clients").where({ id }).first();
}

export async function findClientByName(db: Db, name: string, kind: string): Promise<ClientRow | undefined> {
  return db
    .withSchema(S)
    .table<ClientRow, ClientRow[]>("clients")
    .where({ name, kind })
    .whereNull("revoked_at")
    .orderBy("id")
    .first();
}

export async function findClients(db: Db, ids: number[]): Promise<ClientRow[]> {
  return db.withSchema(S).table("clients").whereIn("id", ids);
}

export async function listClients(db: Db, page: PageQuery) {
  return fetchPage<Record<string, unknown>>(
    db.withSchema(S).table("clients").select("*"),
    page,
    "id",
    (r) => r.id as number,
  );
}

/** Active keys whose hash starts like the presented one, with their active client. */
export async function findKeyCandidates(db: Db, lookup: string): Promise<(ClientRow & { hash: string })[]> {
  return db
    .withSchema(S)
    .table("api_keys as k")
    .join("clients as c", "c.id", "k.client_id")
    .where("k.lookup", lookup)
    .whereNull("k.revoked_at")
    .whereNull("c.revoked_at")
    .select("c.*", "k.hash");
}

/** The lookup digests of every active key of an active client (shared/security/api-key-digest.ts). */
export async function listActiveKeyLookups(db: Db): Promise<string[]> {
  const rows: { lookup: string }[] = await db
    .withSchema(S)
    .table("api_keys as k")
    .join("clients as c", "c.id", "k.client_id")
    .whereNull("k.revoked_at")
    .whereNull("c.revoked_at")
    .distinct("k.lookup");
  return rows.map((r) => r.lookup);
}

export interface ClientChanges {
  name?: string;
  scopes?: string[];
  webhookEvents?: string[];
}

/** Changes an active client; undefined when there is none (unknown or revoked). */
export async function updateClient(db: Db, id: number, c: ClientChanges): Promise<ClientRow | undefined> {
  const [row] = await db
    .withSchema(S)
    .table("clients")
    .where({ id })
    .whereNull("revoked_at")
    .update({
      ...(c.name !== undefined ? { name: c.name } : {}),
      ...(c.scopes !== undefined ? { scopes: c.scopes } : {}),
      ...(c.webhookEvents !== undefined ? { webhook_events: c.webhookEvents } : {}),
    })
    .returning<ClientRow[]>("*");
  return row;
}

export async function revokeClient(db: Db, id: number): Promise<ClientRow | undefined> {
  const [row] = await db
    .withSchema(S)
    .table("clients")
    .where({ id })
    .whereNull("revoked_at")
    .update({ revoked_at: db.fn.now() })
    .returning<ClientRow[]>("*");
  if (row)
    await db
      .withSchema(S)
      .table("api_keys")
      .where({ client_id: id })
      .whereNull("revoked_at")
      .update({ revoked_at: db.fn.now() });
  return row;
}

export async function revokeKeysOf(db: Db, clientId: number): Promise<void> {
  await db
    .withSchema(S)
    .table("api_keys")
    .where({ client_id: clientId })
    .whereNull("revoked_at")
    .update({ revoked_at: db.fn.now() });
}

/** Serialises concurrent bootstraps of the admin client across replicas. */
export async function lockBootstrap(trx: Db): Promise<void> {
  await trx.raw("SELECT pg_advisory_xact_lock(hashtext('clients.bootstrap-admin'))");
}
