/**
 * A client's `externalId` names one order only (docs/api.md, `POST /api/v1/orders`). The
 * orders table's unique index is the last word; this module refuses a duplicate before anything
 * is written, for the orders whose intake writes in other services first (a contact sent inline).
 */
import type { Knex } from "knex";
import { ConflictError } from "../../shared/errors";
import * as repo from "./orders.repository";

/** The orders table's unique index on a client's externalId. */
export const EXTERNAL_ID_UNIQUE = "orders_client_external_id_unique";

/** The 409 naming the client's order with this externalId, if there is one. */
export async function duplicateOrder(db: Knex, clientId: number, externalId: string): Promise<ConflictError | undefined> {
  const existing = await repo.findOrderByExternalId(db, clientId, externalId);
  if (!existing) return undefined;
  return new ConflictError(`You already sent an order with externalId ${JSON.stringify(externalId)}: ${existing.code}.`, {
    existingOrderId: existing.id, existingOrderCode: existing.code,
  });
}

async function refuseDuplicate(db: Knex, clientId: number, externalId: string): Promise<void> {
  const conflict = await duplicateOrder(db, clientId, externalId);
  if (conflict) throw conflict;
}

/**
 * A claim outlives its request only when the process died: an action's time-out stops its
 * caller waiting, not the handler, so the margin is wide.
 */
const staleAfterSeconds = (requestTimeoutMs: number) => Math.max(60, (6 * requestTimeoutMs) / 1000);

/**
 * Runs `work` (the rest of the intake) while this request alone holds the client's externalId,
 * once no order has it. A concurrent request with the same externalId is refused (409) before it
 * writes: checking for the order without the claim would let both pass and the loser's inline
 * contact, reference and event remain. The claim is dropped once `work` ends, committed or not.
 */
export async function holdingExternalId<T>(
  db: Knex, claim: { clientId: number; externalId: string; requestTimeoutMs: number }, work: () => Promise<T>,
): Promise<T> {
  const { clientId, externalId } = claim;
  if (!(await repo.claimExternalId(db, clientId, externalId, staleAfterSeconds(claim.requestTimeoutMs)))) {
    await refuseDuplicate(db, clientId, externalId);
    throw new ConflictError(`An order with externalId ${JSON.stringify(externalId)} is being taken right now; send it again to see how it ended.`, {
      externalId,
    });
  }
  try {
    await refuseDuplicate(db, clientId, externalId);
    return await work();
  } finally {
    await repo.releaseExternalId(db, clientId, externalId);
  }
}
