/**
 * A client's `externalId` names one order only (docs/api.md, `POST /api/v1/orders`). The
 * orders table's unique index is the last word; this module finds the duplicates of a batch
 * before anything is written (one query), and holds the externalIds of the orders whose intake
 * writes in other services first (a contact sent inline) while they are taken.
 */
import type { Knex } from "knex";
import { ConflictError } from "../../shared/errors";
import * as repo from "./orders.repository";
import { presentOrder, type Order } from "./orders.representation";

/** The orders table's unique index on a client's externalId. */
export const EXTERNAL_ID_UNIQUE = "orders_client_external_id_unique";

function duplicateOf(existing: repo.OrderRow, externalId: string): ConflictError {
  return new ConflictError(
    `You already sent an order with externalId ${JSON.stringify(externalId)}: ${existing.code}.`,
    {
      existingOrderId: existing.id,
      existingOrderCode: existing.code,
    },
  );
}

/** The client's earlier orders with these externalIds: each a 409 naming it, or the call's own. */
export interface EarlierOrders {
  duplicates: Map<string, ConflictError>;
  /**
   * Orders that this very call took in an earlier attempt: the broker sends a slow order again
   * (shared/messaging/repeatable-calls.ts), and the repeat answers the order its first attempt
   * wrote, as that attempt would have, instead of a 409 naming it.
   */
  own: Map<string, Order>;
}

/** The client's orders that already have one of these externalIds (one query; their items only for the call's own). */
export async function earlierOrders(
  db: Knex,
  clientId: number,
  externalIds: string[],
  callId: string | undefined,
): Promise<EarlierOrders> {
  const existing = await repo.findOrdersByExternalIds(db, clientId, [...new Set(externalIds)]);
  const isOwn = (row: repo.OrderRow) => callId !== undefined && row.taken_by_call === callId;
  const ownRows = existing.filter(isOwn);
  const items =
    ownRows.length > 0
      ? await repo.itemsOf(
          db,
          ownRows.map((row) => row.id),
        )
      : new Map<number, repo.ItemRow[]>();
  return {
    duplicates: new Map(
      existing.filter((row) => !isOwn(row)).map((row) => [row.external_id!, duplicateOf(row, row.external_id!)]),
    ),
    own: new Map(ownRows.map((row) => [row.external_id!, presentOrder(row, items.get(row.id) ?? [])])),
  };
}

/**
 * The externalIds this process holds. Within the process a key is held by one request at a time
 * (`held`); across processes by a session advisory lock on one connection this process keeps
 * out of the pool while it holds any, so the claims of a process that dies (SIGKILL, OOM) die
 * with its connection, at once: a retry of its order is taken by another replica. On PGlite
 * (one process, one connection) that connection is the session; the process is the only
 * claimant and its claims end with it. The connection goes back to the pool, without locks,
 * when the last claim ends.
 */
class ExternalIdClaims {
  private readonly held = new Set<string>();
  private connection: Promise<repo.HeldConnection | null> | null = null;
  /** Lock, unlock and the connection's taking and return, one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Knex) {}

  async claim(clientId: number, externalId: string): Promise<boolean> {
    const id = `${clientId}:${externalId}`;
    if (this.held.has(id)) return false;
    this.held.add(id);
    let locked = false;
    try {
      locked = await this.serially(async () =>
        repo.lockExternalId(this.db, await this.session(), clientId, externalId),
      );
    } finally {
      if (!locked) await this.drop(id, () => Promise.resolve());
    }
    return locked;
  }

  release(clientId: number, externalId: string): Promise<void> {
    return this.drop(`${clientId}:${externalId}`, async (connection) =>
      repo.unlockExternalId(this.db, connection, clientId, externalId),
    );
  }

  /**
   * Never throws: an unlock fails only on a broken connection, whose session took its locks
   * with it; the request's own outcome stands.
   */
  private async drop(id: string, unlock: (connection: repo.HeldConnection | null) => Promise<void>): Promise<void> {
    this.held.delete(id);
    await this.serially(async () => {
      if (this.connection === null) return;
      const connection = await this.connection;
      try {
        await unlock(connection);
      } finally {
        if (this.held.size === 0) await this.endSession(connection);
      }
    }).catch(() => undefined);
  }

  private session(): Promise<repo.HeldConnection | null> {
    this.connection ??= repo.holdConnection(this.db).catch((err: unknown) => {
      this.connection = null;
      throw err;
    });
    return this.connection;
  }

  private async endSession(connection: repo.HeldConnection | null): Promise<void> {
    this.connection = null;
    if (connection !== null) await repo.releaseConnection(this.db, connection);
  }

  private serially<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

const claimsByDatabase = new WeakMap<Knex, ExternalIdClaims>();

function claimsOf(db: Knex): ExternalIdClaims {
  let claims = claimsByDatabase.get(db);
  if (!claims) claimsByDatabase.set(db, (claims = new ExternalIdClaims(db)));
  return claims;
}

/** The 409 of a batch's row whose externalId an earlier row of the same batch has. */
export function sameExternalIdAs(firstIndex: number, externalId: string): ConflictError {
  return new ConflictError(
    `Row ${firstIndex} of this batch has the same externalId ${JSON.stringify(externalId)}: an externalId names one order.`,
    { externalId, duplicateOfIndex: firstIndex },
  );
}

/** The 409 of an externalId that another request of the client holds right now. */
function beingTaken(externalId: string): ConflictError {
  return new ConflictError(
    `An order with externalId ${JSON.stringify(externalId)} is being taken right now; send it again to see how it ended.`,
    { externalId },
  );
}

/**
 * Runs `work` (the rest of the intake) while this request alone holds each of the client's
 * `externalIds` it could claim; `work` is told the ones another request holds (their 409s), and
 * checks for existing orders itself, after the claims. A concurrent request with the same
 * externalId is so refused (409) before it writes: checking for the order without the claim would
 * let both pass and the loser's inline contact, reference and event remain. The claims are
 * dropped once `work` ends, committed or not, or when the process holding them dies.
 */
export async function holdingExternalIds<T>(
  db: Knex,
  clientId: number,
  externalIds: string[],
  work: (busy: Map<string, ConflictError>) => Promise<T>,
): Promise<T> {
  const claims = claimsOf(db);
  const held: string[] = [];
  const busy = new Map<string, ConflictError>();
  try {
    for (const externalId of new Set(externalIds)) {
      if (await claims.claim(clientId, externalId)) held.push(externalId);
      else busy.set(externalId, beingTaken(externalId));
    }
    return await work(busy);
  } finally {
    for (const externalId of held) await claims.release(clientId, externalId);
  }
}
