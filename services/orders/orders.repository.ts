/**
 * SQL of the orders, their items, the day's code counters and the externalId locks (the lookups
 * are in orders.lookups.repository.ts, the Idempotency-Keys in orders.idempotency-keys.repository.ts).
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import { nextVersion } from "../../shared/database/version-column";
import type { AddressInput, OrderStatus } from "./orders.params";
import type { ContactSnapshot, PackagingReferenceSnapshot, PackagingSnapshot } from "./orders.snapshots";

const S = "orders";

export interface OrderRow {
  id: number;
  code: string;
  client_id: number;
  status: OrderStatus;
  /** 1 when created, one more on each change: the order's ETag (shared/http/conditional.ts). */
  version: number;
  external_id: string | null;
  external_reference: string | null;
  contact: ContactSnapshot;
  customer: { id: number; name: string };
  invoicing_address: AddressInput;
  delivery_address: AddressInput;
  created_at: Date;
  updated_at: Date;
  validated_at: Date | null;
  cancelled_at: Date | null;
  /** The call that took it, when one request sent it (orders.intake.ts, a repeat of that call). */
  taken_by_call: string | null;
}

export interface ItemRow {
  order_id: number;
  position: number;
  ordered_quantity: number;
  packaging_id: number;
  packaging: PackagingSnapshot;
  packaging_reference: PackagingReferenceSnapshot | null;
}

export interface NewOrder {
  code: string;
  clientId: number;
  externalId: string | null;
  externalReference: string | null;
  contact: ContactSnapshot;
  customer: { id: number; name: string };
  invoicingAddress: AddressInput;
  deliveryAddress: AddressInput;
  takenByCall: string | null;
}

export type NewItem = Omit<ItemRow, "order_id">;

/** Which orders a reader may see: its own, or all of them. */
export type Visibility = { all: true } | { all: false; clientId: number };

/** What the order is given before it is written: its id, its code's number, the time it is taken. */
export interface Reservation {
  id: number;
  codeNumber: number;
  at: Date;
}

/**
 * The next `count` numbers of the day's sequence, each with an order id, and the database's time:
 * the orders (and the events that carry them) are then known in full before the one statement
 * that writes them. Codes must be unique and may skip numbers (docs/api.md): a number taken by a
 * request that then fails is not given again.
 *
 * The counter is one row per day, which every order of the day updates: its commit must not wait
 * for the disk. Committed at once on its own (no lock held while the order is built), and
 * asynchronously (`synchronous_commit` off for this statement's transaction only): a synchronous
 * commit held the row's lock until its WAL was flushed, and every concurrent order queued on that
 * row behind one disk flush each (bench/README.md, issue 23). Nothing is lost by it:
 *
 * - Recovery after a crash replays a prefix of the WAL, up to the last record that reached the
 *   disk (a standby, too, receives the WAL in order). The counter's commit record is in the WAL
 *   (not yet on disk) when its statement returns; the order that takes the number is written
 *   after that, so its records follow the counter's. An order that survives a crash therefore
 *   has its counter update survive with it, and the order's own synchronous commit flushes the
 *   counter's update to disk along with it.
 * - So a crash can only lose a counter update whose number no surviving order holds: the counter
 *   then hands that number out again, to the first order that stores it. No stored code repeats;
 *   a number may be skipped, as one taken by a failed request already is.
 *
 * It must run outside a transaction: there, the setting would make the caller's whole transaction
 * commit asynchronously, and the row would stay locked until that transaction ends.
 */
export async function reserveOrders(db: Knex, day: string, count: number): Promise<Reservation[]> {
  if (db.isTransaction) throw new Error("reserveOrders commits on its own: call it outside a transaction");
  const { rows } = await db.raw<{ rows: { code_number: number; id: number; at: Date }[] }>(
    `WITH no_flush AS (SELECT set_config('synchronous_commit', 'off', true)),
     counter AS (
       INSERT INTO ${S}.order_code_counters (day, last_value) VALUES (?, ?)
       ON CONFLICT (day) DO UPDATE SET last_value = order_code_counters.last_value + EXCLUDED.last_value
       RETURNING last_value, now() AS at)
     SELECT counter.last_value - ? + n AS code_number, nextval('${S}.orders_id_seq')::int AS id, counter.at
     FROM no_flush, counter, generate_series(1, ?) AS n ORDER BY n`,
    [day, count, count, count],
  );
  return rows.map((r) => ({ id: r.id, codeNumber: Number(r.code_number), at: r.at }));
}

/** The row a new order will be, as `returning *` would give it back. */
export function newOrderRow(o: NewOrder, r: Reservation): OrderRow {
  return {
    id: r.id,
    code: o.code,
    client_id: o.clientId,
    status: "pending",
    version: 1,
    external_id: o.externalId,
    external_reference: o.externalReference,
    contact: o.contact,
    customer: o.customer,
    invoicing_address: o.invoicingAddress,
    delivery_address: o.deliveryAddress,
    created_at: r.at,
    updated_at: r.at,
    validated_at: null,
    cancelled_at: null,
    taken_by_call: o.takenByCall,
  };
}

const JSON_COLUMNS = ["contact", "customer", "invoicing_address", "delivery_address"] as const;

/** An order to write: its row, its items and its outbox row. */
export interface OrderWrite {
  row: OrderRow;
  items: NewItem[];
  outboxRow: Record<string, unknown>;
}

/**
 * Items one statement carries at most: PostgreSQL takes at most 65,535 bound values in one
 * statement (six an item), and knex builds the statement's text recursively.
 */
const ITEMS_PER_STATEMENT = 5000;

/** The orders in groups of whole orders, each with at most ITEMS_PER_STATEMENT items (or one order). */
function statementGroups(orders: OrderWrite[]): OrderWrite[][] {
  const groups: OrderWrite[][] = [[]];
  let items = 0;
  for (const order of orders) {
    if (items + order.items.length > ITEMS_PER_STATEMENT && groups[groups.length - 1].length > 0) {
      groups.push([]);
      items = 0;
    }
    groups[groups.length - 1].push(order);
    items += order.items.length;
  }
  return groups;
}

/**
 * The orders, their items and their outbox rows in one statement (a writable CTE per table):
 * atomic on its own, so one round trip instead of BEGIN, three inserts per order and COMMIT.
 * Orders with more items than a statement carries are written by several, in one transaction.
 * A duplicate externalId fails the whole write on the unique index.
 */
export async function insertOrders(db: Db, orders: OrderWrite[]): Promise<void> {
  const groups = statementGroups(orders);
  if (groups.length === 1) return insertStatement(db, groups[0]);
  const all = async (trx: Db) => {
    for (const group of groups) await insertStatement(trx, group);
  };
  return db.isTransaction ? all(db) : db.transaction(all);
}

async function insertStatement(db: Db, orders: OrderWrite[]): Promise<void> {
  const rows = orders.map(({ row }) => {
    const order: Record<string, unknown> = { ...row };
    for (const column of JSON_COLUMNS) order[column] = JSON.stringify(row[column]);
    return order;
  });
  const items = orders.flatMap(({ row, items }) =>
    items.map((i) => ({
      order_id: row.id,
      position: i.position,
      ordered_quantity: i.ordered_quantity,
      packaging_id: i.packaging_id,
      packaging: JSON.stringify(i.packaging),
      packaging_reference: i.packaging_reference ? JSON.stringify(i.packaging_reference) : null,
    })),
  );
  await db
    .with("items", db.withSchema(S).table("order_items").insert(items))
    .with(
      "event",
      db
        .withSchema(S)
        .table("outbox")
        .insert(orders.map((o) => o.outboxRow)),
    )
    .withSchema(S)
    .table("orders")
    .insert(rows);
}

function visible(db: Db, v: Visibility) {
  const q = db.withSchema(S).table<OrderRow, OrderRow[]>("orders");
  return v.all ? q : q.where("client_id", v.clientId);
}

export async function findOrder(db: Db, id: number, v: Visibility): Promise<OrderRow | undefined> {
  return visible(db, v).where({ id }).first();
}

/**
 * The order, locked until the transaction `trx` ends: what a change checks (its status, its
 * version against If-Match) cannot move before the change is written.
 */
export async function lockOrder(trx: Knex.Transaction, id: number, v: Visibility): Promise<OrderRow | undefined> {
  return visible(trx, v).where({ id }).forUpdate().first();
}

export async function findOrderByExternalId(
  db: Db,
  clientId: number,
  externalId: string,
): Promise<OrderRow | undefined> {
  return db
    .withSchema(S)
    .table<OrderRow, OrderRow[]>("orders")
    .where({ client_id: clientId, external_id: externalId })
    .first();
}

/** The client's orders with these externalIds. */
export async function findOrdersByExternalIds(db: Db, clientId: number, externalIds: string[]): Promise<OrderRow[]> {
  if (externalIds.length === 0) return [];
  return db
    .withSchema(S)
    .table<OrderRow, OrderRow[]>("orders")
    .where({ client_id: clientId })
    .whereIn("external_id", externalIds);
}

export async function itemsOf(db: Db, orderIds: number[]): Promise<Map<number, ItemRow[]>> {
  const rows = (await db
    .withSchema(S)
    .table("order_items")
    .whereIn("order_id", orderIds)
    .orderBy(["order_id", "position"])) as ItemRow[];
  const byOrder = new Map<number, ItemRow[]>(orderIds.map((id) => [id, []]));
  for (const r of rows) byOrder.get(r.order_id)?.push(r);
  return byOrder;
}

/**
 * Moves an order `v` sees from one of `from` to `to`, and to its next version, in one statement
 * that locks the row as it writes; undefined when there is no such order or it was in no such state.
 */
export async function transition(
  db: Db,
  id: number,
  v: Visibility,
  from: OrderStatus[],
  to: OrderStatus,
): Promise<OrderRow | undefined> {
  const stamp =
    to === "validated" ? { validated_at: db.fn.now() } : to === "cancelled" ? { cancelled_at: db.fn.now() } : {};
  const [row] = await visible(db, v)
    .where({ id })
    .whereIn("status", from)
    .update({ status: to, version: nextVersion(db), updated_at: db.fn.now(), ...stamp })
    .returning<OrderRow[]>("*");
  return row;
}

/** A database connection taken out of the pool, for locks that last as long as its session (the driver's own). */
export type HeldConnection = object;

/** The part of knex's client (typed `any`) that lends the pool's connections. */
interface ConnectionPool {
  config: { pool?: { max?: number } };
  acquireConnection(): Promise<HeldConnection>;
  releaseConnection(connection: HeldConnection): Promise<void>;
}

const poolOf = (db: Knex) => db.client as ConnectionPool;

/** Takes a connection out of the pool until `releaseConnection`; null when the pool has only one (PGlite). */
export async function holdConnection(db: Knex): Promise<HeldConnection | null> {
  const pool = poolOf(db);
  return pool.config.pool?.max === 1 ? null : pool.acquireConnection();
}

/** Gives a held connection back, without any lock of its session left on it. */
export async function releaseConnection(db: Knex, connection: HeldConnection): Promise<void> {
  try {
    await db.raw("SELECT pg_advisory_unlock_all()").connection(connection);
  } finally {
    await poolOf(db).releaseConnection(connection);
  }
}

const externalIdLockKey = (clientId: number, externalId: string) => `orders.external_id:${clientId}:${externalId}`;

/**
 * Locks a client's externalId for the session of `connection` (or the only connection): a
 * session advisory lock, which PostgreSQL drops the moment the session ends, as when its
 * process is killed. False while another session holds it.
 */
export async function lockExternalId(
  db: Knex,
  connection: HeldConnection | null,
  clientId: number,
  externalId: string,
): Promise<boolean> {
  const query = db.raw<{ rows: { locked: boolean }[] }>(
    "SELECT pg_try_advisory_lock(hashtextextended(?, 0)) AS locked",
    [externalIdLockKey(clientId, externalId)],
  );
  const { rows } = await (connection === null ? query : query.connection(connection));
  return rows[0].locked === true;
}

export async function unlockExternalId(
  db: Knex,
  connection: HeldConnection | null,
  clientId: number,
  externalId: string,
): Promise<void> {
  const query = db.raw("SELECT pg_advisory_unlock(hashtextextended(?, 0))", [externalIdLockKey(clientId, externalId)]);
  await (connection === null ? query : query.connection(connection));
}
