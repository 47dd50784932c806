/**
 * An outbox of its own and relays on it whose "brokers" are stand-ins that record what is
 * published and answer as the test says: for the relay's tests (shared/messaging/outbox-relay.mixin.ts)
 * that need a publish to hang, fail or be acknowledged at will.
 */
import type { Knex } from "knex";
import type { ServiceBroker } from "moleculer";
import type { DomainEvent } from "../../shared/messaging/events";
import { addOutboxClaims, addOutboxTraceparent, appendEvent, createOutboxTable } from "../../shared/messaging/outbox";
import { closeDatabase, openDatabase } from "../../shared/database/db";
import { OutboxRelay } from "../../shared/messaging/outbox-relay.mixin";
import { createTestDatabase, type TestDatabase } from "./database";
import { EVENTUALLY_MS } from "./deadlines";

export interface Publish {
  channel: string;
  event: DomainEvent;
  msgID: string;
  /** How long the relay said to wait for the acknowledgement (JetStream's publish option). */
  timeout?: number;
}

/** A broker that records each publish and answers it as `ack` says. */
export function brokerStub(ack: (event: DomainEvent, publish: Publish) => Promise<void>) {
  const published: Publish[] = [];
  const broker = {
    started: true,
    channelAdapter: { connected: true },
    sendToChannel(channel: string, event: DomainEvent, opts: { msgID: string; timeout?: number }) {
      const publish = { channel, event, msgID: opts.msgID, timeout: opts.timeout };
      published.push(publish);
      return ack(event, publish);
    },
  };
  return { broker: broker as unknown as ServiceBroker, published };
}

type Logger = ConstructorParameters<typeof OutboxRelay>[0]["logger"];

/** A logger that keeps the relay's warnings. */
export function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  return { logger: { warn: (line: string) => warnings.push(line) } as unknown as Logger, warnings };
}

export const silentLogger = recordingLogger().logger;

/** Creates `<schema>.outbox` with the relay's columns. */
export async function createRelayOutbox(db: Knex, schema: string): Promise<void> {
  await db.raw("CREATE SCHEMA IF NOT EXISTS ??", [schema]);
  await createOutboxTable(db, schema);
  await addOutboxClaims(db, schema);
  await addOutboxTraceparent(db, schema);
}

/**
 * A database of the calling describe block's own with `<schema>.outbox`: created before its
 * tests, the outbox emptied before each, dropped after them. `db` is there inside the tests.
 */
export function useRelayOutbox(schema: string): { readonly db: Knex } {
  let database: TestDatabase | undefined;
  let db: Knex | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDatabase(database.url, 4);
    await createRelayOutbox(db, schema);
  });
  afterAll(async () => {
    if (!database) return;
    await closeDatabase(database.url);
    await database.drop();
  });
  beforeEach(() => opened().withSchema(schema).table("outbox").delete());
  const opened = (): Knex => {
    if (!db) throw new Error("useRelayOutbox: the database opens in beforeAll, so use it inside tests and hooks");
    return db;
  };
  return {
    get db() {
      return opened();
    },
  };
}

let nextEntity = 1;

/** Appends `n` sales_order_validated events in one transaction; resolves to their entity ids. */
export async function appendEvents(db: Knex, schema: string, n: number): Promise<number[]> {
  const ids = Array.from({ length: n }, () => nextEntity++);
  await db.transaction(async (trx) => {
    for (const entityId of ids)
      await appendEvent(trx, schema, {
        event: "sales_order_validated",
        ownerClientId: 7,
        entityId,
        data: { entityId },
      });
  });
  return ids;
}

export async function unpublishedCount(db: Knex, schema: string): Promise<number> {
  const row = (await db.withSchema(schema).table("outbox").whereNull("published_at").count({ n: "*" }).first()) as {
    n: string;
  };
  return Number(row.n);
}

export async function until(
  done: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = EVENTUALLY_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
