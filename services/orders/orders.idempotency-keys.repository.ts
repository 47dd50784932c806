/**
 * SQL of the `idempotency_keys` table: an Idempotency-Key of POST /orders or POST /orders/batch,
 * claimed in the orders' own transaction, with the answer it got (orders.idempotency.ts).
 */
import type { Db } from "../../shared/database/db";

const S = "orders";

export interface IdempotencyRecord {
  request_hash: string;
  order_id: number | null;
  response: unknown;
}

export async function findIdempotencyKey(
  db: Db,
  clientId: number,
  key: string,
): Promise<IdempotencyRecord | undefined> {
  return db
    .withSchema(S)
    .table("idempotency_keys")
    .where({ client_id: clientId, key })
    .first("request_hash", "order_id", "response");
}

/**
 * Claims a key inside the order's transaction. A concurrent request holding the same key waits
 * here until the first commits; false then means the key was taken and must be replayed.
 */
export async function claimIdempotencyKey(
  db: Db,
  clientId: number,
  key: string,
  requestHash: string,
): Promise<boolean> {
  const rows = await db
    .withSchema(S)
    .table("idempotency_keys")
    .insert({ client_id: clientId, key, request_hash: requestHash })
    .onConflict(["client_id", "key"])
    .ignore()
    .returning("client_id");
  return rows.length === 1;
}

export async function completeIdempotencyKey(
  db: Db,
  clientId: number,
  key: string,
  orderId: number | null,
  response: unknown,
): Promise<void> {
  await db
    .withSchema(S)
    .table("idempotency_keys")
    .where({ client_id: clientId, key })
    .update({ order_id: orderId, response: JSON.stringify(response) });
}
