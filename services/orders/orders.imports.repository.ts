/**
 * SQL of the background imports (orders.import-upload.ts, orders.import-worker.ts): the
 * `order_imports` job rows, their uploaded lines in chunks, and one result per line.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import type { Principal } from "../../shared/security/auth";
import type { OrderRow } from "./orders.repository";

const S = "orders";

export type ImportStatus = "receiving" | "queued" | "running" | "completed" | "failed";

export interface ImportRow {
  id: number;
  client_id: number;
  principal: Principal;
  status: ImportStatus;
  total: number;
  created: number;
  rejected: number;
  duplicates: number;
  next_line: number;
  attempts: number;
  claim_token: string | null;
  created_at: Date;
  queued_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
}

/** A line's outcome: the status a single POST /orders would have answered, and what it made or why not. */
export interface LineResult {
  line: number;
  status: number;
  orderId: number | null;
  problem: Record<string, unknown> | null;
}

export interface Counts {
  created: number;
  rejected: number;
  duplicates: number;
}

const lease = (db: Db, leaseMs: number) => db.raw("now() + ?::bigint * interval '1 millisecond'", [leaseMs]);

/** A new import, `receiving` its upload under a lease the upload renews: one cut off by a crash is pruned once it runs out. */
export async function createImport(db: Db, principal: Principal, leaseMs: number): Promise<number> {
  const [row] = await db
    .withSchema(S)
    .table("order_imports")
    .insert({
      client_id: principal.clientId,
      principal: JSON.stringify(principal),
      claimed_until: lease(db, leaseMs),
    })
    .returning<{ id: number }[]>("id");
  return row.id;
}

/** Stores one chunk of uploaded lines and renews the upload's lease. */
export async function storeChunk(db: Db, id: number, firstLine: number, lines: string, leaseMs: number): Promise<void> {
  await db.withSchema(S).table("order_import_lines").insert({ import_id: id, first_line: firstLine, lines });
  await db
    .withSchema(S)
    .table("order_imports")
    .where({ id })
    .update({ claimed_until: lease(db, leaseMs) });
}

/** The upload is complete: the import waits for a worker. */
export async function queueImport(db: Db, id: number, total: number): Promise<ImportRow> {
  const [row] = await db
    .withSchema(S)
    .table("order_imports")
    .where({ id, status: "receiving" })
    .update({ status: "queued", total, queued_at: db.fn.now(), claimed_until: null })
    .returning<ImportRow[]>("*");
  return row;
}

/** A refused upload leaves nothing behind (its lines go with it). */
export async function dropImport(db: Db, id: number): Promise<void> {
  await db.withSchema(S).table("order_imports").where({ id }).delete();
}

/** An import its client may see: never one still being uploaded (its id was not given out yet). */
export async function findImport(db: Db, id: number, clientId: number): Promise<ImportRow | undefined> {
  return db
    .withSchema(S)
    .table("order_imports")
    .where({ id, client_id: clientId })
    .whereNot("status", "receiving")
    .first<ImportRow | undefined>();
}

/** The counts so far, from the results themselves (the job row holds them once it ends). */
export async function countResults(db: Db, id: number): Promise<Counts> {
  const { rows } = await db.raw<{ rows: { created: number; duplicates: number; rejected: number }[] }>(
    `SELECT count(*) FILTER (WHERE status = 201)::int AS created,
            count(*) FILTER (WHERE status = 409)::int AS duplicates,
            count(*) FILTER (WHERE status NOT IN (201, 409))::int AS rejected
       FROM ??.order_import_results WHERE import_id = ?`,
    [S, id],
  );
  return rows[0];
}

/**
 * Claims the oldest queued or running import nobody holds (never claimed, or its holder's lease
 * ran out), for `leaseMs`: one worker at a time works on an import.
 */
export async function claimImport(db: Knex, leaseMs: number): Promise<ImportRow | undefined> {
  const { rows } = await db.raw<{ rows: ImportRow[] }>(
    `UPDATE ??.order_imports i
        SET status = 'running', claim_token = gen_random_uuid(), claimed_until = now() + ?::bigint * interval '1 millisecond',
            started_at = coalesce(started_at, now()), attempts = attempts + 1
      WHERE i.id = (SELECT id FROM ??.order_imports
                     WHERE status IN ('queued', 'running') AND (claimed_until IS NULL OR claimed_until < now())
                     ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING *`,
    [S, leaseMs, S],
  );
  return rows[0];
}

/** The chunk that holds `line`, or undefined past the last one. */
export async function chunkAt(
  db: Db,
  id: number,
  line: number,
): Promise<{ first_line: number; lines: string } | undefined> {
  return db
    .withSchema(S)
    .table("order_import_lines")
    .where({ import_id: id })
    .andWhere("first_line", "<=", line)
    .orderBy("first_line", "desc")
    .first<{ first_line: number; lines: string } | undefined>("first_line", "lines");
}

/** Lines in [from, to) that have a result already: a resumed chunk skips them. */
export async function linesWithResults(db: Db, id: number, from: number, to: number): Promise<Set<number>> {
  const rows = await db
    .withSchema(S)
    .table("order_import_results")
    .where({ import_id: id })
    .andWhere("line", ">=", from)
    .andWhere("line", "<", to)
    .select<{ line: number }[]>("line");
  return new Set(rows.map((r) => r.line));
}

/**
 * The lines' results; pass the transaction that writes their orders. `skipExisting`: lines that
 * have one already keep it (otherwise a second result for a line fails the transaction).
 */
export async function insertResults(
  db: Db,
  id: number,
  results: LineResult[],
  { skipExisting = false } = {},
): Promise<void> {
  if (results.length === 0) return;
  const insert = db
    .withSchema(S)
    .table("order_import_results")
    .insert(
      results.map((r) => ({
        import_id: id,
        line: r.line,
        status: r.status,
        order_id: r.orderId,
        problem: r.problem === null ? null : JSON.stringify(r.problem),
      })),
    );
  await (skipExisting ? insert.onConflict(["import_id", "line"]).ignore() : insert);
}

/** The chunk is done: the claim moves on to `nextLine` with a new lease. False when the claim was lost. */
export async function advance(db: Db, claim: ImportRow, nextLine: number, leaseMs: number): Promise<boolean> {
  const updated = await db
    .withSchema(S)
    .table("order_imports")
    .where({ id: claim.id, claim_token: claim.claim_token })
    .update({ next_line: nextLine, attempts: 0, claimed_until: lease(db, leaseMs) });
  return updated > 0;
}

/** Extends a claim still held; false when it was lost. */
export async function renewLease(db: Db, claim: ImportRow, leaseMs: number): Promise<boolean> {
  const updated = await db
    .withSchema(S)
    .table("order_imports")
    .where({ id: claim.id, claim_token: claim.claim_token })
    .update({ claimed_until: lease(db, leaseMs) });
  return updated > 0;
}

/**
 * Ends the import (`completed` or `failed`) with its final counts, drops its lines (their
 * results say all there is to say), and gives back the row; undefined when the claim was lost.
 */
export async function finishImport(
  trx: Knex.Transaction,
  claim: ImportRow,
  status: "completed" | "failed",
): Promise<ImportRow | undefined> {
  const counts = await countResults(trx, claim.id);
  const [row] = await trx
    .withSchema(S)
    .table("order_imports")
    .where({ id: claim.id, claim_token: claim.claim_token })
    .update({ ...counts, status, finished_at: trx.fn.now(), claim_token: null, claimed_until: null })
    .returning<ImportRow[]>("*");
  if (row) await trx.withSchema(S).table("order_import_lines").where({ import_id: claim.id }).delete();
  return row;
}

export interface ResultRow {
  line: number;
  status: number;
  order_id: number | null;
  problem: Record<string, unknown> | null;
}

/** Up to `limit` results after `afterLine`, in line order. */
export async function resultsAfter(db: Db, id: number, afterLine: number, limit: number): Promise<ResultRow[]> {
  return db
    .withSchema(S)
    .table("order_import_results")
    .where({ import_id: id })
    .andWhere("line", ">", afterLine)
    .orderBy("line")
    .limit(limit)
    .select<ResultRow[]>("line", "status", "order_id", "problem");
}

/**
 * Removes up to `limit` imports that ended more than `olderThanMs` ago, and uploads a crash cut
 * off (still `receiving` once their lease ran out); their lines and results go with them.
 */
export async function pruneImports(db: Db, olderThanMs: number, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: unknown[] }>(
    `DELETE FROM ??.order_imports WHERE id IN (
       SELECT id FROM ??.order_imports
        WHERE finished_at < now() - ?::bigint * interval '1 millisecond'
           OR (status = 'receiving' AND claimed_until < now())
        LIMIT ?)
     RETURNING id`,
    [S, S, olderThanMs, limit],
  );
  return rows.length;
}

/** The orders a page of results created (as they are now), by id. */
export async function ordersByIds(db: Db, ids: number[]): Promise<OrderRow[]> {
  if (ids.length === 0) return [];
  return db.withSchema(S).table("orders").whereIn("id", ids).select<OrderRow[]>("*");
}
