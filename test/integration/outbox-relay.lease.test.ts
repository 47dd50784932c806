/**
 * The outbox relay holds the rows it publishes by a lease, never by a transaction left open
 * while it waits on the broker (shared/messaging/outbox-relay.mixin.ts). Two relays share one outbox here;
 * their "brokers" are stand-ins that record what is published, one of them never acknowledging.
 */
import type { Knex } from "knex";
import type { ServiceBroker } from "moleculer";
import { closeDatabase, openDatabase } from "../../shared/database/db";
import { channelOf, type DomainEvent } from "../../shared/messaging/events";
import {
  addOutboxClaims,
  addOutboxTraceparent,
  appendEvent,
  claimUnpublished,
  createOutboxTable,
  settleClaim,
} from "../../shared/messaging/outbox";
import { OutboxRelay } from "../../shared/messaging/outbox-relay.mixin";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { EVENTUALLY_MS } from "../helpers/deadlines";

const SCHEMA = "outbox_lease_test";
const LEASE_MS = 500;

/** A broker that records each publish and answers it as `ack` says. */
function brokerStub(ack: (event: DomainEvent) => Promise<void>) {
  const published: { channel: string; event: DomainEvent; msgID: string }[] = [];
  const broker = {
    started: true,
    channelAdapter: { connected: true },
    sendToChannel(channel: string, event: DomainEvent, opts: { msgID: string }) {
      published.push({ channel, event, msgID: opts.msgID });
      return ack(event);
    },
  };
  return { broker: broker as unknown as ServiceBroker, published };
}

const silentLogger = { warn: () => undefined } as unknown as ConstructorParameters<typeof OutboxRelay>[0]["logger"];

function relayOn(db: Knex, broker: ServiceBroker): OutboxRelay {
  return new OutboxRelay({ broker, db, schema: SCHEMA, logger: silentLogger, intervalMs: 20, leaseMs: LEASE_MS });
}

async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + EVENTUALLY_MS;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("outbox relay leases", () => {
  let database: TestDatabase;
  let db: Knex;
  let nextEntity = 1;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDatabase(database.url, 4);
    await db.raw("CREATE SCHEMA IF NOT EXISTS ??", [SCHEMA]);
    await createOutboxTable(db, SCHEMA);
    await addOutboxClaims(db, SCHEMA);
    await addOutboxTraceparent(db, SCHEMA);
  });
  afterAll(async () => {
    await closeDatabase(database.url);
    await database.drop();
  });
  beforeEach(() => db.withSchema(SCHEMA).table("outbox").delete());

  async function append(n: number): Promise<number[]> {
    const ids = Array.from({ length: n }, () => nextEntity++);
    await db.transaction(async (trx) => {
      for (const entityId of ids)
        await appendEvent(trx, SCHEMA, {
          event: "sales_order_validated",
          ownerClientId: 7,
          entityId,
          data: { entityId },
        });
    });
    return ids;
  }

  const unpublished = async () =>
    Number(
      (
        (await db.withSchema(SCHEMA).table("outbox").whereNull("published_at").count({ n: "*" }).first()) as {
          n: string;
        }
      ).n,
    );

  /** Sessions on this test's database that sit inside a transaction doing nothing. */
  const idleInTransaction = async () => {
    const { rows } = await db.raw<{ rows: { pid: number; query: string }[] }>(
      "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
    );
    return rows;
  };

  it("when a relay's publish never resolves, then no transaction stays open, and another relay publishes the rows once the lease ends", async () => {
    const entityIds = await append(3);
    const hung = brokerStub(() => new Promise<void>(() => undefined));
    const hungRound = relayOn(db, hung.broker).relayOnce();
    await until(() => hung.published.length === 3, "the hung relay publishing its batch");

    // Mid-publish: the rows are held by the lease alone.
    expect(await idleInTransaction()).toEqual([]);
    const healthy = brokerStub(async () => undefined);
    const second = relayOn(db, healthy.broker);
    expect(await second.relayOnce()).toBe(0);
    expect(healthy.published).toEqual([]);

    // The hung relay gives up when its lease ends, having marked nothing.
    expect(await hungRound).toBe(0);
    await until(async () => (await second.relayOnce()) > 0, "the second relay taking the rows over");
    expect(healthy.published.map((p) => p.event.entityId)).toEqual(entityIds);
    // The same msgID as the first attempt: JetStream stores the re-publish once.
    expect(healthy.published.map((p) => p.msgID)).toEqual(hung.published.map((p) => p.msgID));
    expect(healthy.published.map((p) => p.channel)).toEqual(entityIds.map(() => channelOf("sales_order_validated")));
    expect(await unpublished()).toBe(0);
  });

  it("when a relay dies holding a claim, then its rows are not taken before the lease ends, and are after", async () => {
    const entityIds = await append(2);
    const dead = await claimUnpublished(db, SCHEMA, 100, LEASE_MS);
    expect(dead.events.map((e) => e.entityId)).toEqual(entityIds);

    const healthy = brokerStub(async () => undefined);
    const survivor = relayOn(db, healthy.broker);
    expect(await survivor.relayOnce()).toBe(0);
    await until(async () => (await survivor.relayOnce()) > 0, "the survivor taking the dead relay's rows");
    expect(healthy.published.map((p) => p.event.entityId)).toEqual(entityIds);
    expect(await unpublished()).toBe(0);
  });

  it("when a lapsed claim was taken over, then settling the lapsed claim marks nothing; the new claim marks its rows", async () => {
    await append(2);
    const lapsed = await claimUnpublished(db, SCHEMA, 100, LEASE_MS);
    let current = await claimUnpublished(db, SCHEMA, 100, LEASE_MS);
    expect(current.events).toEqual([]);
    await until(async () => {
      current = await claimUnpublished(db, SCHEMA, 100, 60_000);
      return current.events.length > 0;
    }, "the lapsed claim's rows claimed again");

    await settleClaim(
      db,
      SCHEMA,
      lapsed,
      lapsed.events.map((e) => e.id),
    );
    expect(await unpublished()).toBe(2);
    await settleClaim(db, SCHEMA, current, [current.events[0].id]);
    expect(await unpublished()).toBe(1);
    // The row whose publish failed is released at once, not held until the lease ends.
    const retry = await claimUnpublished(db, SCHEMA, 100, 60_000);
    expect(retry.events.map((e) => e.id)).toEqual([current.events[1].id]);
  });
});
