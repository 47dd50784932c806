/**
 * Taking orders — one (POST /orders) or a batch (orders.batch-intake.ts), by the same rules — as
 * a story: read how each order names its contact and items, check the caller may name them so,
 * resolve every order to snapshots (reads only, one call per service for all of them), refuse
 * the duplicates of an externalId, then write the orders, their items and their
 * `sales_order_created` events in one statement. A refused order is answered with the error a
 * single POST of it would have raised. With `reject_all` nothing is written unless every order
 * is good; with `reject_failed_rows` the good ones are taken.
 *
 * A contact sent inline is the one write outside this service (crm, references), so it comes
 * last, once everything else is known good, with the order's externalId held
 * (orders.external-id.ts) so that a duplicate is refused before it. What is left after a later
 * failure is harmless by construction: the registration is idempotent and owned by the calling
 * partner alone (docs/api.md, "Who sees what"), so a request racing another with the same
 * Idempotency-Key and body ends in the very records the winner's orders name.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { conflictOnUnique } from "../../shared/database/database-errors";
import { RowNotTakenError, type ConflictError } from "../../shared/errors";
import type { Db } from "../../shared/database/db";
import { eventsAppended, outboxRow } from "../../shared/messaging/outbox";
import { requestHash } from "../../shared/http/idempotency";
import { codeDay, orderCode } from "./orders.code";
import { earlierOrders, EXTERNAL_ID_UNIQUE, holdingExternalIds, sameExternalIdAs } from "./orders.external-id";
import { checkScopes, contactModeOf, itemModesOf } from "./orders.identify";
import { placeOnce, replayOf, type KeyedRequest } from "./orders.idempotency";
import type { CreateOrderParams, ErrorPolicy } from "./orders.params";
import type { ResolvedReferences } from "./orders.references-cache";
import * as repo from "./orders.repository";
import { presentOrder, type Order } from "./orders.representation";
import {
  registerInlineContact,
  resolveOrders,
  type Call,
  type OrderModes,
  type ResolvedContact,
} from "./orders.resolve";

export interface Intake {
  db: Knex;
  call: Call;
  references: ResolvedReferences;
  client: Principal;
  idempotencyKey?: string;
  /**
   * The id a call keeps when the broker sends it again (its parent context's, the request's):
   * stored with the order, so that a repeat of a slow order answers it (orders.external-id.ts).
   */
  callId?: string;
  /**
   * What must commit with the orders, or not at all (an import's results for its lines:
   * orders.import-lines.ts); the orders are then written in a transaction of their own with it.
   */
  alongside?: (trx: Knex.Transaction, outcomes: Outcome[]) => Promise<void>;
}

/** An order's outcome: taken, or refused with the error a single POST of it raises. */
export type Outcome = { order: Order } | { error: Error };

/** What a request with an Idempotency-Key keeps as its answer, made of its outcomes. */
export interface Keeping<T> {
  request: KeyedRequest;
  answer(outcomes: Outcome[]): T;
}

/** The outcomes in the orders' order, or the answer replayed when a racing request with the key won. */
export type Taken<T> = { outcomes: Outcome[]; replayed?: undefined } | { outcomes?: undefined; replayed: T };

/** One order of the batch on its way: its place, its body, and what each step found. */
interface Candidate {
  index: number;
  order: CreateOrderParams;
  modes: OrderModes;
  contact?: ResolvedContact;
  items?: repo.NewItem[];
  /** The order an earlier attempt of this very call took: answered, not written again. */
  earlier?: Order;
}

/** Thrown when the unique index refused an externalId that another request took meanwhile. */
class ExternalIdTakenMeanwhile extends Error {}

/** The request's key, with the hash of its body, when it has one. */
export function keyedRequest(intake: Intake, body: unknown): KeyedRequest | undefined {
  const key = intake.idempotencyKey;
  return key ? { clientId: intake.client.clientId, key, hash: requestHash(body) } : undefined;
}

/** POST /orders: a batch of one; its refusal is the request's. */
export async function placeOrder(
  intake: Intake,
  order: CreateOrderParams,
): Promise<{ order: Order; replayed: boolean }> {
  const request = keyedRequest(intake, order);
  const replay = request && (await replayOf<Order>(intake.db, request));
  if (replay) return { order: replay, replayed: true };
  const keeping = request && { request, answer: (outcomes: Outcome[]) => (outcomes[0] as { order: Order }).order };
  const taken = await takeOrders(intake, [order], "reject_all", keeping);
  if (taken.replayed) return { order: taken.replayed, replayed: true };
  const [outcome] = taken.outcomes;
  if ("error" in outcome) throw outcome.error;
  return { order: outcome.order, replayed: false };
}

/** `rows`: each a valid body, or the error its validation raised. */
export async function takeOrders<T>(
  intake: Intake,
  rows: (CreateOrderParams | Error)[],
  policy: ErrorPolicy,
  keeping?: Keeping<T>,
): Promise<Taken<T>> {
  const refused = new Map<number, Error>();
  const candidates = identify(intake.client, rows, refused);
  const resolved = await resolveOrders(
    intake.call,
    intake.references,
    intake.client.clientId,
    candidates.map((c) => c.modes),
  );
  candidates.forEach((c, i) => {
    const r = resolved[i];
    if (r instanceof Error) refused.set(c.index, r);
    else Object.assign(c, { contact: r.contact ?? undefined, items: r.items });
  });
  const inlineIds = candidates.flatMap((c) =>
    c.modes.contact.kind === "inline" && c.order.externalId !== undefined && !refused.has(c.index)
      ? [c.order.externalId]
      : [],
  );
  return holdingExternalIds(intake.db, intake.client.clientId, inlineIds, async (busy) => {
    // A batch looks for earlier orders first, so that one duplicate does not fail the statement
    // of all the others, and an inline contact is registered only for an order known to be new.
    // A lone order with nothing to write elsewhere leaves it to the unique index: a query fewer.
    if (candidates.length > 1 || inlineIds.length > 0) await refuseDuplicates(intake, candidates, refused, busy);
    return takeGood(intake, rows.length, candidates, refused, policy, keeping);
  });
}

/** Each order's modes and scopes; the refused ones are set aside, the others become candidates. */
function identify(client: Principal, rows: (CreateOrderParams | Error)[], refused: Map<number, Error>): Candidate[] {
  const candidates: Candidate[] = [];
  const firstWith = new Map<string, number>();
  rows.forEach((order, index) => {
    if (order instanceof Error) {
      refused.set(index, order);
      return;
    }
    try {
      const modes = { items: order.items, contact: contactModeOf(order), itemModes: itemModesOf(order.items) };
      checkScopes(client, modes.contact, modes.itemModes);
      const first = order.externalId === undefined ? undefined : firstWith.get(order.externalId);
      if (first !== undefined) throw sameExternalIdAs(first, order.externalId!);
      if (order.externalId !== undefined) firstWith.set(order.externalId, index);
      candidates.push({ index, order, modes });
    } catch (err) {
      // identify and checkScopes are pure: what they throw is about this order alone.
      refused.set(index, err as Error);
    }
  });
  return candidates;
}

/** The client's orders that have a candidate's externalId already (one query), then those another request holds. */
async function refuseDuplicates(
  intake: Intake,
  candidates: Candidate[],
  refused: Map<number, Error>,
  busy: Map<string, ConflictError>,
): Promise<void> {
  const pending = candidates.filter((c) => !refused.has(c.index) && c.order.externalId !== undefined);
  const ids = pending.map((c) => c.order.externalId!);
  const earlier = await earlierOrders(intake.db, intake.client.clientId, ids, intake.callId);
  for (const c of pending) {
    c.earlier = earlier.own.get(c.order.externalId!);
    const conflict = earlier.duplicates.get(c.order.externalId!) ?? busy.get(c.order.externalId!);
    if (conflict && !c.earlier) refused.set(c.index, conflict);
  }
}

async function takeGood<T>(
  intake: Intake,
  count: number,
  candidates: Candidate[],
  refused: Map<number, Error>,
  policy: ErrorPolicy,
  keeping?: Keeping<T>,
): Promise<Taken<T>> {
  for (;;) {
    if (policy === "reject_all" && refused.size > 0) {
      const notTaken = new RowNotTakenError([...refused.keys()].sort((a, b) => a - b));
      for (const c of candidates) if (!refused.has(c.index)) refused.set(c.index, notTaken);
    }
    const earlier = candidates.flatMap((c): [number, Order][] => (c.earlier ? [[c.index, c.earlier]] : []));
    const good = candidates.filter((c) => !refused.has(c.index) && !c.earlier);
    if (good.length === 0) return { outcomes: outcomesOf(count, refused, earlier) };
    await registerInlineContacts(intake, good, refused);
    const ready = good.filter((c) => !refused.has(c.index));
    try {
      return await writeOrders(intake, count, ready, refused, earlier, keeping);
    } catch (err) {
      if (!(err instanceof ExternalIdTakenMeanwhile)) throw err;
      // Another request took one of these externalIds since they were checked: refuse those, try the rest again.
      await refuseDuplicates(intake, ready, refused, new Map());
    }
  }
}

/**
 * The inline contacts of the good orders, each distinct one registered once, one after the
 * other (a contact refused by crm or references refuses its orders).
 */
async function registerInlineContacts(intake: Intake, good: Candidate[], refused: Map<number, Error>): Promise<void> {
  const registered = new Map<string, ResolvedContact | Error>();
  for (const c of good) {
    const mode = c.modes.contact;
    if (mode.kind !== "inline") continue;
    const key = JSON.stringify([mode.contact, mode.customer]);
    if (!registered.has(key)) {
      registered.set(key, await registerInlineContact(intake.call, intake.client.clientId, mode).catch(refusalOrThrow));
    }
    const contact = registered.get(key)!;
    if (contact instanceof Error) refused.set(c.index, contact);
    else c.contact = contact;
  }
}

/** A 4xx error is the order's refusal; anything else fails the request. */
function refusalOrThrow(err: unknown): Error {
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && typeof code === "number" && code >= 400 && code < 500) return err;
  throw err;
}

/**
 * The orders' own writes: the orders, their items and their events in one statement; with an
 * Idempotency-Key, in one transaction with the key's claim and answer (orders.idempotency.ts).
 */
async function writeOrders<T>(
  intake: Intake,
  count: number,
  ready: Candidate[],
  refused: Map<number, Error>,
  earlier: [number, Order][],
  keeping?: Keeping<T>,
): Promise<Taken<T>> {
  const { db } = intake;
  const day = codeDay(new Date());
  // The day's counter moves even for orders refused below: codes may skip a number, never repeat.
  const reservations = await repo.reserveOrders(db, day, ready.length);
  const writes = ready.map((c, i) => orderWrite(intake, c, day, reservations[i]));
  const outcomes = outcomesOf(count, refused, [
    ...earlier,
    ...writes.map((w, i): [number, Order] => [ready[i].index, w.order]),
  ]);
  const write = async (on: Db) => {
    await repo.insertOrders(on, writes);
    eventsAppended(on, "orders");
  };
  const written: Promise<Taken<T>> = keeping
    ? placeOnce(db, keeping.request, keeping.answer(outcomes), count === 1 ? writes[0].order.id : null, write).then(
        ({ answer, replayed }) => (replayed ? { replayed: answer } : { outcomes }),
      )
    : writeAlongside(db, write, outcomes, intake.alongside).then(() => ({ outcomes }));
  return conflictOnUnique(written, (constraint) =>
    constraint === EXTERNAL_ID_UNIQUE ? new ExternalIdTakenMeanwhile() : undefined,
  );
}

/** The write, in one transaction with what must commit with it, when there is such a thing. */
function writeAlongside(
  db: Knex,
  write: (on: Db) => Promise<void>,
  outcomes: Outcome[],
  alongside: Intake["alongside"],
): Promise<void> {
  if (!alongside) return write(db);
  return db.transaction(async (trx) => {
    await write(trx);
    await alongside(trx, outcomes);
  });
}

function orderWrite(
  { client, callId }: Intake,
  c: Candidate,
  day: string,
  reservation: repo.Reservation,
): repo.OrderWrite & { order: Order } {
  const { contact, customer } = c.contact!;
  const row = repo.newOrderRow(
    {
      code: orderCode(day, reservation.codeNumber),
      clientId: client.clientId,
      externalId: c.order.externalId ?? null,
      externalReference: c.order.externalReference ?? null,
      contact,
      customer,
      invoicingAddress: c.order.invoicingAddress,
      deliveryAddress: c.order.deliveryAddress,
      takenByCall: callId ?? null,
    },
    reservation,
  );
  const items = c.items!;
  const order = presentOrder(
    row,
    items.map((i) => ({ ...i, order_id: row.id })),
  );
  const event = outboxRow({
    event: "sales_order_created",
    ownerClientId: client.clientId,
    entityId: row.id,
    data: order,
  });
  return { row, items, outboxRow: event, order };
}

function outcomesOf(count: number, refused: Map<number, Error>, taken: [number, Order][]): Outcome[] {
  const orders = new Map(taken);
  return Array.from({ length: count }, (_, i): Outcome => {
    const order = orders.get(i);
    return order ? { order } : { error: refused.get(i)! };
  });
}
