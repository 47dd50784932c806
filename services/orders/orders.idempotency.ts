/**
 * Idempotency-Key for orders (one, or a batch), the whole rule: the same key with the same body
 * replays the first response; the same key with another body is refused (bodies compared by shared/http/idempotency.ts's
 * hash). A key is claimed in the order's own transaction, so a request racing another with the
 * same key waits for it, then replays its answer.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { IdempotencyKeyReusedError } from "../../shared/errors";
import * as repo from "./orders.idempotency-keys.repository";

/** A request sent with an Idempotency-Key: the client's, its key, and the hash of its body. */
export interface KeyedRequest {
  clientId: number;
  key: string;
  hash: string;
}

/** The answer (an order, or a batch's results), and whether it is the replay of an earlier request's (a header says so). */
export interface Answered<T> {
  answer: T;
  replayed: boolean;
}

/** The first answer given to this key; null while there is none. */
export async function replayOf<T>(db: Knex, request: KeyedRequest): Promise<T | null> {
  return firstAnswer<T>(db, request);
}

/** Thrown inside the transaction when a concurrent request committed the same key first. */
class KeyTakenMeanwhile extends Error {}

/**
 * The orders written (`write`) in one transaction with the key's claim and its answer. A request
 * that claimed the same key first is waited for (on the claim), and its answer replayed instead.
 * `orderId`: the order the answer is (null for a batch's).
 */
export async function placeOnce<T>(
  db: Knex,
  request: KeyedRequest,
  answer: T,
  orderId: number | null,
  write: (on: Db) => Promise<void>,
): Promise<Answered<T>> {
  const { clientId, key, hash } = request;
  try {
    await db.transaction(async (trx) => {
      if (!(await repo.claimIdempotencyKey(trx, clientId, key, hash))) throw new KeyTakenMeanwhile();
      await write(trx);
      await repo.completeIdempotencyKey(trx, clientId, key, orderId, answer);
    });
    return { answer, replayed: false };
  } catch (err) {
    if (err instanceof KeyTakenMeanwhile) return { answer: (await firstAnswer<T>(db, request))!, replayed: true };
    throw err;
  }
}

/** The answer first given to this key, or null; the key sent with another body is refused. */
async function firstAnswer<T>(db: Knex, { clientId, key, hash }: KeyedRequest): Promise<T | null> {
  const known = await repo.findIdempotencyKey(db, clientId, key);
  if (!known || !known.response) return null;
  if (known.request_hash !== hash) throw new IdempotencyKeyReusedError();
  return known.response as T;
}
