/**
 * The order state machine (docs/api.md, validate and cancel):
 * pending → validated → cancelled, pending → cancelled.
 * A move and its event are written in one transaction; a move that is not allowed is 409.
 * Moves that arrive together commit together (shared/database/group-commit.ts), each in a
 * savepoint of its own: one that fails is rolled back alone.
 */
import type { GroupCommit } from "../../shared/database/group-commit";
import { hasScope, type Principal } from "../../shared/security/auth";
import { ConflictError, NotFoundError } from "../../shared/errors";
import { requirePreconditions, type Preconditions } from "../../shared/http/conditional";
import type { EventName } from "../../shared/messaging/events";
import { appendEvent } from "../../shared/messaging/outbox";
import type { OrderStatus } from "./orders.params";
import * as repo from "./orders.repository";
import { presentOrder, type Order } from "./orders.representation";

export type Move = "validate" | "cancel";

const MOVES: Record<Move, { from: OrderStatus[]; to: OrderStatus; event: EventName; pastTense: string }> = {
  validate: { from: ["pending"], to: "validated", event: "sales_order_validated", pastTense: "validated" },
  cancel: { from: ["pending", "validated"], to: "cancelled", event: "sales_order_cancelled", pastTense: "cancelled" },
};

/** The back office (orders:manage) sees every order; any other client only its own. */
export function visibilityFor(client: Principal): repo.Visibility {
  return hasScope(client, "orders:manage") ? { all: true } : { all: false, clientId: client.clientId };
}

/**
 * `preconditions`: the request's If-Match / If-None-Match, checked against the version read under
 * the row lock, so of two changes that name the same version one is made and the other is 412.
 * A failed precondition comes before a move that is not allowed (RFC 9110 §13.2.2).
 */
export async function moveOrder(
  writes: GroupCommit,
  client: Principal,
  id: number,
  move: Move,
  preconditions?: Preconditions,
): Promise<Order> {
  const { from, to, event, pastTense } = MOVES[move];
  const visibility = visibilityFor(client);
  return writes.transaction(async (trx) => {
    const current = await repo.lockOrder(trx, id, visibility);
    if (!current) throw new NotFoundError("order", id);
    requirePreconditions(preconditions, "order", current.version);
    const row = await repo.transition(trx, id, from, to);
    if (!row) {
      throw new ConflictError(`Order ${current.code} is ${current.status}; it cannot be ${pastTense}.`, {
        status: current.status,
      });
    }
    const order = presentOrder(row, (await repo.itemsOf(trx, [id])).get(id) ?? []);
    await appendEvent(trx, "orders", { event, ownerClientId: row.client_id, entityId: row.id, data: order });
    return order;
  });
}
