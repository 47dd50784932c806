/**
 * The order state machine (docs/api.md, validate and cancel):
 * pending → validated → cancelled, pending → cancelled.
 * A move and its event are written in one transaction; a move that is not allowed is 409.
 * Moves that arrive together commit together (shared/database/group-commit.ts): one that is
 * refused wrote nothing, and one that fails rolls its group back, each then running alone.
 */
import type { Knex } from "knex";
import type { GroupCommit } from "../../shared/database/group-commit";
import { hasScope, type Principal } from "../../shared/security/auth";
import { ConflictError, NotFoundError } from "../../shared/errors";
import { hasPreconditions, requirePreconditions, type Preconditions } from "../../shared/http/conditional";
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
 *
 * A move without preconditions is one statement when it is allowed (the update, which locks the
 * row as it writes); only when it is not, or when there are preconditions to check, is the order
 * read and locked first, to say why. Either way it refuses before it writes anything, which lets
 * the moves that commit together skip a savepoint each (GroupCommit.checkedTransaction).
 */
export async function moveOrder(
  writes: GroupCommit,
  client: Principal,
  id: number,
  move: Move,
  preconditions?: Preconditions,
): Promise<Order> {
  const { from, to, event } = MOVES[move];
  const visibility = visibilityFor(client);
  return writes.checkedTransaction(async (trx) => {
    const moved = hasPreconditions(preconditions) ? undefined : await repo.transition(trx, id, visibility, from, to);
    const row = moved ?? (await checkThenTransition(trx, id, visibility, move, preconditions));
    const order = presentOrder(row, (await repo.itemsOf(trx, [id])).get(id) ?? []);
    await appendEvent(trx, "orders", { event, ownerClientId: row.client_id, entityId: row.id, data: order });
    return order;
  });
}

/** The order read under its lock: 404, 412 or 409 when the move may not be made; else made. */
async function checkThenTransition(
  trx: Knex.Transaction,
  id: number,
  visibility: repo.Visibility,
  move: Move,
  preconditions: Preconditions | undefined,
): Promise<repo.OrderRow> {
  const { from, to, pastTense } = MOVES[move];
  const current = await repo.lockOrder(trx, id, visibility);
  if (!current) throw new NotFoundError("order", id);
  requirePreconditions(preconditions, "order", current.version);
  if (!from.includes(current.status))
    throw new ConflictError(`Order ${current.code} is ${current.status}; it cannot be ${pastTense}.`, {
      status: current.status,
    });
  const row = await repo.transition(trx, id, visibility, from, to);
  // The lock holds the status just checked: the update cannot miss.
  if (!row) throw new Error(`order ${id}: locked in status ${current.status}, yet its move to ${to} found no row`);
  return row;
}
