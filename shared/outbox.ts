/**
 * The transactional outbox. A service that raises events keeps an `outbox` table in its own
 * schema and appends the event in the same transaction as the change that raised it, so the
 * event exists if and only if the change committed. A relay (shared/outbox-relay.mixin.ts) publishes
 * the rows and marks them sent once the publish is acknowledged.
 */
import { EventEmitter } from "node:events";
import type { Knex } from "knex";
import type { Db } from "./db";
import { currentRequestId } from "./request-context";

/** Webhook event names (DECISIONS: Webhooks). */
export const EVENTS = ["sales_order_created", "sales_order_validated", "sales_order_cancelled", "contact_reference_created"] as const;
export type EventName = (typeof EVENTS)[number];

/** What an outbox row carries and the relay publishes. */
export interface DomainEvent<T = unknown> {
  /** Globally unique: `<schema>-<outbox id>`; the webhook-id is derived from it. */
  id: string;
  event: EventName;
  /** The client that owns the entity (partners are told only of their own). */
  ownerClientId: number;
  entity: string;
  entityId: number;
  occurredAt: string;
  /** The entity's representation at the time of the event (the webhook body). */
  data: T;
  /** The request that raised it, so the webhook attempt log can name it (shared/request-context.ts). */
  requestId?: string;
}

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

export interface NewEvent {
  event: EventName;
  ownerClientId: number;
  entity: string;
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
  await trx.withSchema(schema).table("outbox").insert({
    event: e.event,
    owner_client_id: e.ownerClientId,
    entity: e.entity,
    entity_id: e.entityId,
    data: JSON.stringify(e.data),
    request_id: currentRequestId() ?? null,
  });
  // A rollback means there is nothing to publish; the rejection is the transaction owner's to handle.
  trx.executionPromise.then(() => committed.emit(schema), () => undefined);
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
  };
}

/** The oldest unsent events, locked so that concurrent relays take different rows. */
export async function claimUnpublished(trx: Db, schema: string, limit: number): Promise<DomainEvent[]> {
  const rows = (await trx.withSchema(schema).table("outbox").whereNull("published_at").orderBy("id")
    .limit(limit).forUpdate().skipLocked()) as OutboxRow[];
  return rows.map((r) => toDomainEvent(schema, r));
}

export async function markPublished(trx: Db, schema: string, ids: string[]): Promise<void> {
  const numeric = ids.map((id) => Number(id.slice(schema.length + 1)));
  await trx.withSchema(schema).table("outbox").whereIn("id", numeric).update({ published_at: trx.fn.now() });
}

/** Age in seconds of the oldest unsent event (0 when none), for the outbox-lag metric. */
export async function outboxLagSeconds(db: Db, schema: string): Promise<number> {
  const row = await db.withSchema(schema).table("outbox").whereNull("published_at")
    .min({ oldest: "created_at" }).first() as { oldest: Date | null } | undefined;
  return row?.oldest ? Math.max(0, (Date.now() - new Date(row.oldest).getTime()) / 1000) : 0;
}
