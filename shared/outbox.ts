/**
 * The transactional outbox. A service that raises events keeps an `outbox` table in its own
 * schema and appends the event in the same transaction as the change that raised it, so the
 * event exists if and only if the change committed. A relay (shared/outbox-relay.ts) publishes
 * the rows and marks them sent once the publish is acknowledged.
 */
import type { Knex } from "knex";
import type { Db } from "./db";

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
}

/** Creates `<schema>.outbox`; call from the service's first migration. */
export async function createOutboxTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).createTable("outbox", (t) => {
    t.bigIncrements("id").primary();
    t.text("event").notNullable();
    t.integer("owner_client_id").notNullable();
    t.text("entity").notNullable();
    t.integer("entity_id").notNullable();
    t.jsonb("data").notNullable();
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("published_at", { useTz: true });
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

/** Appends an event; pass the transaction that makes the change. */
export async function appendEvent(trx: Knex.Transaction, schema: string, e: NewEvent): Promise<void> {
  await trx.withSchema(schema).table("outbox").insert({
    event: e.event,
    owner_client_id: e.ownerClientId,
    entity: e.entity,
    entity_id: e.entityId,
    data: JSON.stringify(e.data),
  });
}

interface OutboxRow {
  id: number;
  event: EventName;
  owner_client_id: number;
  entity: string;
  entity_id: number;
  data: unknown;
  created_at: Date;
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
