/**
 * The outbox read as a feed (docs/webhooks.md, "The events feed"; docs/architecture.md, "The
 * events feed"): each producer's outbox rows in the order of the transactions that wrote them,
 * read only below the oldest transaction still open anywhere in the cluster, so that no row can
 * ever appear before a position a reader has already passed.
 *
 * A row's position is `(tx, id)` in its producer's outbox (`tx` the writing transaction's id,
 * `pg_current_xact_id()`), and `(tx, producer, id)` across producers. An id or a timestamp taken
 * before commit is no such order: a transaction that commits late with a smaller id would appear
 * behind a reader. Transaction ids are no order of commits either, but every transaction below
 * the horizon `pg_snapshot_xmin(pg_current_snapshot())` has ended, and every one that starts
 * writing later gets an id at or above it: what is below a horizon is final. The reader (the
 * webhooks service, webhooks.feed.ts) takes the horizon once per page and asks each producer
 * for its rows below it with `<producer>.eventsAfter`, the action this module adds to every
 * service with an outbox. All services share one PostgreSQL cluster (one DATABASE_URL, a
 * schema each; embedded: one PGlite), so their transaction ids compare.
 */
import type { Knex } from "knex";
import type { Context, ServiceSchema } from "moleculer";
import type { Db } from "../database/db";
import { DOMAIN_EVENTS, EVENTS, type EventName, type Producer } from "./events";
import { MAX_PAGE_BYTES, withinBytes } from "../http/paging";
import { BIGINT_ID_MAX } from "../http/params";

/** Adds each row's position (a migration after createOutboxTable); existing rows take the migration's. */
export async function addOutboxPositions(knex: Knex, schema: string): Promise<void> {
  await knex.raw(`ALTER TABLE ??.outbox ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id()`, [schema]);
  // A page of every owner's events (the back office's) reads the first; a client's own, the second.
  await knex.raw(`CREATE INDEX outbox_positions ON ??.outbox (tx, id)`, [schema]);
  await knex.raw(`CREATE INDEX outbox_positions_by_owner ON ??.outbox (owner_client_id, tx, id)`, [schema]);
}

export async function dropOutboxPositions(knex: Knex, schema: string): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS ??.outbox_positions_by_owner`, [schema]);
  await knex.raw(`DROP INDEX IF EXISTS ??.outbox_positions`, [schema]);
  await knex.raw(`ALTER TABLE ??.outbox DROP COLUMN tx`, [schema]);
}

/**
 * The horizon: every transaction below it has ended. Taken once per page, before any producer
 * is read (a read with a later snapshot sees every row below it).
 */
export async function feedHorizon(db: Db): Promise<string> {
  const { rows } = await db.raw<{ rows: { horizon: string }[] }>(
    `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`,
  );
  return rows[0].horizon;
}

/** A position in one producer's outbox; `tx` in decimal digits (xid8 exceeds a double's exact range). */
export interface OutboxPosition {
  tx: string;
  id: number;
}

/** What a page asks of one producer: its rows after `after`, below `below`, that the reader may receive. */
export interface FeedQuery {
  after: OutboxPosition;
  below: string;
  /** Events the reader hears about the entities it owns. */
  ownEvents: EventName[];
  ownerClientId: number;
  /** Events it hears about every client's entities (the back office's order events). */
  everyOwnerEvents: EventName[];
  limit: number;
}

export interface FeedRow {
  tx: string;
  id: number;
  event: EventName;
  ownerClientId: number;
  createdAt: string;
  /** The entity as the event carries it: the webhook body is its JSON.stringify. */
  data: unknown;
}

export interface FeedRows {
  rows: FeedRow[];
  /** More rows may follow the last one below the same horizon: the reader merges only up to it. */
  more: boolean;
}

interface StoredRow {
  tx: string;
  id: number;
  event: EventName;
  owner_client_id: number;
  created_at: Date;
  data: unknown;
}

/**
 * One branch per kind of grant, each an index range scan in position order (a partner's page
 * reads only its own rows); the branches are disjoint, merged by position.
 */
function branches(q: FeedQuery): { where: string; bindings: Knex.Value[] }[] {
  const own = q.ownEvents.filter((e) => !q.everyOwnerEvents.includes(e));
  const out: { where: string; bindings: Knex.Value[] }[] = [];
  if (own.length > 0) out.push({ where: "owner_client_id = ? AND event = ANY(?)", bindings: [q.ownerClientId, own] });
  if (q.everyOwnerEvents.length > 0) out.push({ where: "event = ANY(?)", bindings: [q.everyOwnerEvents] });
  return out;
}

/**
 * Up to `limit` rows the query allows, in position order, and no more than MAX_PAGE_BYTES of
 * them (the first always): the answer travels in one transporter message.
 */
export async function readFeedRows(db: Db, schema: string, q: FeedQuery): Promise<FeedRows> {
  const parts = branches(q);
  if (parts.length === 0) return { rows: [], more: false };
  // Positions are compared as xid8, never as their text (which sorts "10" before "9").
  const select = (where: string) =>
    `(SELECT tx, id, event, owner_client_id, created_at, data FROM ??.outbox
       WHERE (tx, id) > (?::xid8, ?) AND tx < ?::xid8 AND ${where} ORDER BY tx, id LIMIT ?)`;
  const sql = `SELECT r.tx::text AS tx, r.id, r.event, r.owner_client_id, r.created_at, r.data
                 FROM (${parts.map((p) => select(p.where)).join(" UNION ALL ")}) AS r ORDER BY r.tx, r.id LIMIT ?`;
  const bindings = parts.flatMap((p) => [schema, q.after.tx, q.after.id, q.below, ...p.bindings, q.limit + 1]);
  const { rows } = await db.raw<{ rows: StoredRow[] }>(sql, [...bindings, q.limit + 1]);
  const fitting = withinBytes(rows.slice(0, q.limit).map(toFeedRow), MAX_PAGE_BYTES);
  return { rows: fitting, more: rows.length > fitting.length };
}

function toFeedRow(r: StoredRow): FeedRow {
  return {
    tx: r.tx,
    id: Number(r.id),
    event: r.event,
    ownerClientId: r.owner_client_id,
    createdAt: new Date(r.created_at).toISOString(),
    data: r.data,
  };
}

/** The action every producer has: `<producer>.eventsAfter`. */
export const FEED_ACTION = "eventsAfter";

/** The services whose outboxes hold events, in position order (the name breaks a tie of `tx`). */
export const FEED_PRODUCERS: readonly Producer[] = [...new Set(EVENTS.map((e) => DOMAIN_EVENTS[e].producer))].sort();

const TX = { type: "string", pattern: /^(0|[1-9][0-9]{0,19})$/ } as const;
const EVENT_LIST = { type: "array", items: { type: "enum", values: [...EVENTS] }, max: EVENTS.length } as const;

/** Adds `<service>.eventsAfter` to a service with an outbox in `schema` (after databaseMixin). */
export function outboxFeedMixin(schema: string): Partial<ServiceSchema> {
  return {
    actions: {
      [FEED_ACTION]: {
        // Internal: the webhooks service reads it for the events feed, having checked the grants.
        visibility: "public",
        params: {
          $$strict: true,
          after: {
            type: "object",
            strict: true,
            props: { tx: TX, id: { type: "number", integer: true, min: 0, max: BIGINT_ID_MAX } },
          },
          below: TX,
          ownEvents: EVENT_LIST,
          ownerClientId: { type: "number", integer: true },
          everyOwnerEvents: EVENT_LIST,
          limit: { type: "number", integer: true, min: 1, max: 1000 },
        },
        handler(this: { db: Knex }, ctx: Context<FeedQuery>): Promise<FeedRows> {
          return readFeedRows(this.db, schema, ctx.params);
        },
      },
    },
  } as unknown as Partial<ServiceSchema>;
}
