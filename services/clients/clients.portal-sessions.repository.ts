/**
 * SQL of the portal sessions (clients.portal_sessions): a sign-in link, exchanged once for a
 * session. Functions take a Db (knex or a transaction) and return plain rows.
 */
import type { Db } from "../../shared/database/db";
import type { ClientRow } from "./clients.repository";

const S = "clients";
const T = "portal_sessions";

export interface PortalSessionRow {
  id: number;
  client_id: number;
  link_expires_at: Date;
  exchanged_at: Date | null;
  expires_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = ["id", "client_id", "link_expires_at", "exchanged_at", "expires_at", "created_at", "revoked_at"];

export async function insertLink(
  db: Db,
  clientId: number,
  linkHash: string,
  linkTtlMs: number,
): Promise<PortalSessionRow> {
  const [row] = await db
    .withSchema(S)
    .table(T)
    .insert({
      client_id: clientId,
      link_hash: linkHash,
      link_expires_at: db.raw("now() + ?::bigint * interval '1 millisecond'", [linkTtlMs]),
    })
    .returning<PortalSessionRow[]>(COLUMNS);
  return row;
}

/** An unused, unexpired, unrevoked link of an active client, with its client. */
export async function findUsableLink(
  db: Db,
  linkHash: string,
): Promise<(PortalSessionRow & { client: ClientRow }) | undefined> {
  const row: (ClientRow & { session_id: number }) | undefined = await db
    .withSchema(S)
    .table(`${T} as s`)
    .join("clients as c", "c.id", "s.client_id")
    .where("s.link_hash", linkHash)
    .whereNull("s.exchanged_at")
    .whereNull("s.revoked_at")
    .where("s.link_expires_at", ">", db.fn.now())
    .whereNull("c.revoked_at")
    .first("c.*", "s.id as session_id");
  if (!row) return undefined;
  const link: PortalSessionRow | undefined = await db
    .withSchema(S)
    .table(T)
    .where({ id: row.session_id })
    .first(COLUMNS);
  return link ? { ...link, client: row } : undefined;
}

/**
 * Uses a link, once: only an unused, unexpired, unrevoked link of an active client becomes a
 * session; two exchanges of one link race on the row and one of them finds nothing.
 */
export async function exchangeLink(
  db: Db,
  linkId: number,
  session: { lookup: string; hash: string; ttlMs: number },
): Promise<(PortalSessionRow & { client: ClientRow }) | undefined> {
  const [row] = await db
    .withSchema(S)
    .table(T)
    .where({ id: linkId })
    .whereNull("exchanged_at")
    .whereNull("revoked_at")
    .where("link_expires_at", ">", db.fn.now())
    .whereIn("client_id", db.withSchema(S).table("clients").whereNull("revoked_at").select("id"))
    .update({
      lookup: session.lookup,
      hash: session.hash,
      exchanged_at: db.fn.now(),
      expires_at: db.raw("now() + ?::bigint * interval '1 millisecond'", [session.ttlMs]),
    })
    .returning<PortalSessionRow[]>(COLUMNS);
  if (!row) return undefined;
  const client = await db.withSchema(S).table<ClientRow, ClientRow[]>("clients").where({ id: row.client_id }).first();
  return client ? { ...row, client } : undefined;
}

/** Live sessions whose token hash starts like the presented one, with their active client. */
export async function findSessionCandidates(
  db: Db,
  lookup: string,
): Promise<(ClientRow & { hash: string; session_id: number; session_expires_at: Date })[]> {
  return db
    .withSchema(S)
    .table(`${T} as s`)
    .join("clients as c", "c.id", "s.client_id")
    .where("s.lookup", lookup)
    .whereNull("s.revoked_at")
    .where("s.expires_at", ">", db.fn.now())
    .whereNull("c.revoked_at")
    .select("c.*", "s.hash", "s.id as session_id", "s.expires_at as session_expires_at");
}

/** The lookup digests of every live session: they pass a throttled source like active keys. */
export async function listLiveSessionLookups(db: Db): Promise<string[]> {
  const rows: { lookup: string }[] = await db
    .withSchema(S)
    .table(`${T} as s`)
    .join("clients as c", "c.id", "s.client_id")
    .whereNotNull("s.lookup")
    .whereNull("s.revoked_at")
    .where("s.expires_at", ">", db.fn.now())
    .whereNull("c.revoked_at")
    .distinct("s.lookup");
  return rows.map((r) => r.lookup);
}

/** A client's links and sessions that can still be used, newest first. */
export async function listOpen(db: Db, clientId: number, limit: number): Promise<PortalSessionRow[]> {
  return (
    db
      .withSchema(S)
      .table(T)
      .where({ client_id: clientId })
      .whereNull("revoked_at")
      // An unused link not yet expired, or a session not yet expired.
      .whereRaw("((exchanged_at IS NULL AND link_expires_at > now()) OR expires_at > now())")
      .orderBy("id", "desc")
      .limit(limit)
      .select(COLUMNS)
  );
}

/** Revokes one of a client's links or sessions; undefined when it has none by that id. */
export async function revoke(db: Db, clientId: number, id: number): Promise<PortalSessionRow | undefined> {
  const [row] = await db
    .withSchema(S)
    .table(T)
    .where({ id, client_id: clientId })
    .update({ revoked_at: db.raw("coalesce(revoked_at, now())") })
    .returning<PortalSessionRow[]>(COLUMNS);
  return row;
}

/** With the client: every link and session it has. */
export async function revokeAllOf(db: Db, clientId: number): Promise<void> {
  await db
    .withSchema(S)
    .table(T)
    .where({ client_id: clientId })
    .whereNull("revoked_at")
    .update({ revoked_at: db.fn.now() });
}
