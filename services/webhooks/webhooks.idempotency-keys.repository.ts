/**
 * SQL of the `idempotency_keys` table: an Idempotency-Key of a webhooks action, claimed by the
 * request that acts on it, then holding its answer (webhooks.idempotency.ts).
 */
import type { Db } from "../../shared/database/db";

const S = "webhooks";

export interface IdempotencyKeyRow {
  request_hash: string;
  status_code: number | null;
  response: unknown;
  location: string | null;
}

/** What an action answered, as it is replayed. */
export interface StoredAnswer {
  status: number;
  body: unknown;
  location?: string;
}

/**
 * Claims the key for `lockMs`: true when this request may act on it — the key is new, or its
 * holder died before answering (its claim ran out), or its answer is older than `keepMs`.
 */
export async function claimIdempotencyKey(
  db: Db,
  claim: { clientId: number; key: string; requestHash: string; lockMs: number; keepMs: number },
): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>(
    `INSERT INTO ??.idempotency_keys AS k (client_id, key, request_hash, locked_until)
     VALUES (?, ?, ?, now() + ?::bigint * interval '1 millisecond')
     ON CONFLICT (client_id, key) DO UPDATE
        SET request_hash = excluded.request_hash, locked_until = excluded.locked_until, created_at = now(),
            status_code = NULL, response = NULL, location = NULL
      WHERE (k.response IS NULL AND k.locked_until < now())
         OR k.created_at < now() - ?::bigint * interval '1 millisecond'
     RETURNING 1`,
    [S, claim.clientId, claim.key, claim.requestHash, claim.lockMs, claim.keepMs],
  );
  return rows.length === 1;
}

export async function findIdempotencyKey(
  db: Db,
  clientId: number,
  key: string,
): Promise<IdempotencyKeyRow | undefined> {
  return db
    .withSchema(S)
    .table("idempotency_keys")
    .where({ client_id: clientId, key })
    .first("request_hash", "status_code", "response", "location");
}

/** Stores the answer; in the action's own transaction, so a key holds an answer if and only if the action committed. */
export async function completeIdempotencyKey(
  db: Db,
  clientId: number,
  key: string,
  answer: StoredAnswer,
): Promise<void> {
  await db
    .withSchema(S)
    .table("idempotency_keys")
    .where({ client_id: clientId, key })
    .update({
      status_code: answer.status,
      response: JSON.stringify(answer.body),
      location: answer.location ?? null,
    });
}

/** Lets the key go after its action failed: a retry runs the action again. */
export async function releaseIdempotencyKey(db: Db, clientId: number, key: string): Promise<void> {
  await db.raw(`DELETE FROM ??.idempotency_keys WHERE client_id = ? AND key = ? AND response IS NULL`, [
    S,
    clientId,
    key,
  ]);
}

/** Deletes up to `limit` keys older than `olderThanMs` (retention). */
export async function pruneIdempotencyKeys(db: Db, olderThanMs: number, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `WITH gone AS (
       DELETE FROM ??.idempotency_keys WHERE ctid IN (
         SELECT ctid FROM ??.idempotency_keys WHERE created_at < now() - ?::bigint * interval '1 millisecond'
          ORDER BY created_at LIMIT ?)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [S, S, olderThanMs, limit],
  );
  return rows[0]?.n ?? 0;
}
