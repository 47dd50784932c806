/**
 * The transactional outbox. A service that raises events keeps an `outbox` table in its own
 * schema and appends the event in the same transaction as the change that raised it, so the
 * event exists if and only if the change committed. A relay (shared/messaging/outbox-relay.mixin.ts) publishes
 * the rows and marks them sent once the publish is acknowledged. Which events exist, and what
 * they mean, is the event contract's (shared/messaging/events.ts).
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Knex } from "knex";
import type { Db } from "../database/db";
import { prepared } from "../database/prepared-statement";
import { DOMAIN_EVENTS, type DomainEvent, type EventName } from "./events";
import { currentRequestId } from "../observability/request-context";
import { currentTraceparent } from "../observability/tracing";
import { createJobRunsTable, dropJobRunsTable } from "../database/periodic-job";

/** Creates `<schema>.outbox`; call from the service's first migration. */
export async function createOutboxTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).createTable("outbox", (t) => {
    t.bigIncrements("id").primary();
    t.text("event").notNullable();
    t.integer("owner_client_id").notNullable();
    t.text("entity").notNullable();
    t.integer("entity_id").notNullable();
    // json, not jsonb: jsonb reorders keys, and the webhook body must be the entity's JSON as the API shows it.
    t.json("data").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("published_at", { useTz: true });
    t.text("request_id");
  });
  await knex.raw(`CREATE INDEX outbox_unpublished ON ??.outbox (id) WHERE published_at IS NULL`, [schema]);
}

export async function dropOutboxTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).dropTableIfExists("outbox");
}

/**
 * Adds the relay's claim to `<schema>.outbox` (a migration after createOutboxTable): a relay
 * holds the rows it publishes by a lease, not by a transaction kept open while it publishes.
 */
export async function addOutboxClaims(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).alterTable("outbox", (t) => {
    // Until then no other relay takes the row; a relay that dies lets it lapse.
    t.timestamp("claimed_until", { useTz: true });
    // Which claim holds the row, so a relay whose lease lapsed and was taken over marks nothing.
    t.uuid("claim");
  });
}

export async function dropOutboxClaims(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).alterTable("outbox", (t) => {
    t.dropColumn("claimed_until");
    t.dropColumn("claim");
  });
}

/**
 * Adds the trace of the work that appended each row (a migration after createOutboxTable): the
 * relay publishes it under that trace (shared/observability/tracing.ts).
 */
export async function addOutboxTraceparent(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).alterTable("outbox", (t) => {
    t.text("traceparent");
  });
}

export async function dropOutboxTraceparent(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).alterTable("outbox", (t) => {
    t.dropColumn("traceparent");
  });
}

export interface NewEvent {
  event: EventName;
  ownerClientId: number;
  entityId: number;
  data: unknown;
}

const committed = new EventEmitter().setMaxListeners(0);

/**
 * Calls `listener` each time a transaction of this process that appended events to `schema`
 * commits: the relay publishes at once instead of waiting for its next round. Returns the
 * function that removes the listener.
 */
export function onEventsCommitted(schema: string, listener: () => void): () => void {
  committed.on(schema, listener);
  return () => committed.off(schema, listener);
}

/** Appends an event; pass the transaction that makes the change. */
export async function appendEvent(trx: Knex.Transaction, schema: string, e: NewEvent): Promise<void> {
  await prepared(trx.withSchema(schema).table("outbox").insert(outboxRow(e)));
  eventsAppended(trx, schema);
}

/**
 * The outbox row of an event, for a change that writes it in the same statement as itself (a
 * writable CTE is atomic without a transaction); call eventsAppended once it ran.
 */
export function outboxRow(e: NewEvent): Record<string, unknown> {
  return {
    event: e.event,
    owner_client_id: e.ownerClientId,
    entity: DOMAIN_EVENTS[e.event].entity,
    entity_id: e.entityId,
    data: JSON.stringify(e.data),
    request_id: currentRequestId() ?? null,
    traceparent: currentTraceparent() ?? null,
  };
}

/** Wakes this process's relay once the events just written through `db` are committed. */
export function eventsAppended(db: Db, schema: string): void {
  // Outside a transaction the statement committed already. A rollback means there is nothing to
  // publish; the rejection is the transaction owner's to handle.
  if (!db.isTransaction) committed.emit(schema);
  else
    outermost(db as Knex.Transaction).executionPromise.then(
      () => committed.emit(schema),
      () => undefined,
    );
}

/**
 * The transaction whose commit makes `trx`'s rows visible: `trx` itself, or, for a savepoint
 * (a transaction begun inside another: shared/database/group-commit.ts), the one it is nested
 * in — a savepoint's own promise settles when it is released, before anything is committed.
 */
function outermost(trx: Knex.Transaction): Knex.Transaction {
  let top = trx as Knex.Transaction & { parentTransaction?: Knex.Transaction };
  while (top.parentTransaction) top = top.parentTransaction;
  return top;
}

interface OutboxRow {
  id: number;
  event: EventName;
  owner_client_id: number;
  entity: string;
  entity_id: number;
  data: unknown;
  created_at: Date;
  request_id: string | null;
  traceparent: string | null;
}

export function toDomainEvent(schema: string, row: OutboxRow): DomainEvent {
  return {
    id: `${schema}-${row.id}`,
    event: row.event,
    ownerClientId: row.owner_client_id,
    entity: row.entity,
    entityId: row.entity_id,
    occurredAt: row.created_at.toISOString(),
    data: row.data,
    ...(row.request_id ? { requestId: row.request_id } : {}),
    ...(row.traceparent ? { traceparent: row.traceparent } : {}),
  };
}

/** Rows a relay holds for a lease while it publishes them; `id` names the claim. */
export interface Claim {
  id: string;
  events: DomainEvent[];
}

/**
 * Claims the oldest unsent events that no live claim holds, for `leaseMs`, in one statement:
 * no transaction stays open while they are published. `SKIP LOCKED` lets concurrent relays
 * take different rows instead of waiting for each other.
 */
export async function claimUnpublished(db: Db, schema: string, limit: number, leaseMs: number): Promise<Claim> {
  const id = randomUUID();
  const { rows } = await prepared(
    db.raw<{ rows: OutboxRow[] }>(
      `UPDATE ??.outbox SET claimed_until = now() + ?::integer * interval '1 millisecond', claim = ?
        WHERE id IN (SELECT id FROM ??.outbox
                      WHERE published_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
                      ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
        RETURNING id, event, owner_client_id, entity, entity_id, data, created_at, request_id, traceparent`,
      [schema, leaseMs, id, schema, limit],
    ),
  );
  // RETURNING keeps no order; subscribers are told in the order the changes committed.
  const events = rows.sort((a, b) => a.id - b.id).map((r) => toDomainEvent(schema, r));
  return { id, events };
}

/**
 * Ends a claim in one statement: the rows whose publish was acknowledged are sent, the others
 * are released for the next round. Only while the claim still holds them: once its lease
 * lapsed and another relay took them over, they are that relay's to mark.
 */
export async function settleClaim(db: Db, schema: string, claim: Claim, publishedIds: string[]): Promise<void> {
  const numeric = publishedIds.map((id) => Number(id.slice(schema.length + 1)));
  // The ids as one array: the same text whatever their number, so one prepared statement.
  await prepared(
    db
      .withSchema(schema)
      .table("outbox")
      .where({ claim: claim.id })
      .whereNull("published_at")
      .update({
        published_at: db.raw("CASE WHEN id = ANY(?::bigint[]) THEN now() END", [numeric]),
        claimed_until: null,
        claim: null,
      }),
  );
}

/**
 * Indexes the sent rows by when they were sent (a migration after createOutboxTable), so that
 * pruning reads only the rows it removes.
 */
export async function addOutboxSentIndex(knex: Knex, schema: string): Promise<void> {
  await knex.raw(`CREATE INDEX outbox_sent ON ??.outbox (published_at) WHERE published_at IS NOT NULL`, [schema]);
}

export async function dropOutboxSentIndex(knex: Knex, schema: string): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS ??.outbox_sent`, [schema]);
}

/**
 * Deletes up to `limit` rows published more than `olderThanMs` ago, oldest first, in one
 * statement; resolves to how many. Unsent rows are never touched: an event is pruned only
 * once its channel acknowledged it (JetStream keeps its own copy for a week).
 */
export async function pruneSentEvents(db: Db, schema: string, olderThanMs: number, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `WITH gone AS (
       DELETE FROM ??.outbox WHERE id IN (
         SELECT id FROM ??.outbox WHERE published_at < now() - ?::bigint * interval '1 millisecond' ORDER BY published_at LIMIT ?)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [schema, schema, olderThanMs, limit],
  );
  return rows[0]?.n ?? 0;
}

/** Age in seconds of the oldest unsent event (0 when none), for the outbox-lag metric. */
export async function outboxLagSeconds(db: Db, schema: string): Promise<number> {
  const row = (await db
    .withSchema(schema)
    .table("outbox")
    .whereNull("published_at")
    .min({ oldest: "created_at" })
    .first()) as { oldest: Date | null } | undefined;
  return row?.oldest ? Math.max(0, (Date.now() - new Date(row.oldest).getTime()) / 1000) : 0;
}

/** Migration steps of a service with an outbox: the index that finds sent rows, and the table that claims each retention run. */
export async function addOutboxRetention(knex: Knex, schema: string): Promise<void> {
  await addOutboxSentIndex(knex, schema);
  await createJobRunsTable(knex, schema);
}

export async function dropOutboxRetention(knex: Knex, schema: string): Promise<void> {
  await dropJobRunsTable(knex, schema);
  await dropOutboxSentIndex(knex, schema);
}
