/**
 * The outbox relay holds the rows it publishes by a lease, never by a transaction left open
 * while it waits on the broker (shared/messaging/outbox-relay.mixin.ts). Two relays share one outbox here;
 * their "brokers" are stand-ins that record what is published, one of them never acknowledging.
 */
import type { Knex } from "knex";
import type { ServiceBroker } from "moleculer";
import { channelOf } from "../../shared/messaging/events";
import { claimUnpublished, settleClaim } from "../../shared/messaging/outbox";
import { OutboxRelay } from "../../shared/messaging/outbox-relay.mixin";
import {
  appendEvents,
  brokerStub,
  silentLogger,
  unpublishedCount,
  until,
  useRelayOutbox,
} from "../helpers/relay-harness";

const SCHEMA = "outbox_lease_test";
const LEASE_MS = 500;

function relayOn(db: Knex, broker: ServiceBroker): OutboxRelay {
  return new OutboxRelay({ broker, db, schema: SCHEMA, logger: silentLogger, intervalMs: 20, leaseMs: LEASE_MS });
}

describe("outbox relay leases", () => {
  const outbox = useRelayOutbox(SCHEMA);

  const append = (n: number) => appendEvents(outbox.db, SCHEMA, n);
  const unpublished = () => unpublishedCount(outbox.db, SCHEMA);

  /** Sessions on this test's database that sit inside a transaction doing nothing. */
  const idleInTransaction = async () => {
    const { rows } = await outbox.db.raw<{ rows: { pid: number; query: string }[] }>(
      "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
    );
    return rows;
  };

  it("when a relay's publish never resolves, then no transaction stays open, and another relay publishes the rows once the lease ends", async () => {
    const entityIds = await append(3);
    const hung = brokerStub(() => new Promise<void>(() => undefined));
    const hungRound = relayOn(outbox.db, hung.broker).relayOnce();
    await until(() => hung.published.length === 3, "the hung relay publishing its batch");

    // Mid-publish: the rows are held by the lease alone.
    expect(await idleInTransaction()).toEqual([]);
    const healthy = brokerStub(async () => undefined);
    const second = relayOn(outbox.db, healthy.broker);
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
    const dead = await claimUnpublished(outbox.db, SCHEMA, 100, LEASE_MS);
    expect(dead.events.map((e) => e.entityId)).toEqual(entityIds);

    const healthy = brokerStub(async () => undefined);
    const survivor = relayOn(outbox.db, healthy.broker);
    expect(await survivor.relayOnce()).toBe(0);
    await until(async () => (await survivor.relayOnce()) > 0, "the survivor taking the dead relay's rows");
    expect(healthy.published.map((p) => p.event.entityId)).toEqual(entityIds);
    expect(await unpublished()).toBe(0);
  });

  it("when a lapsed claim was taken over, then settling the lapsed claim marks nothing; the new claim marks its rows", async () => {
    await append(2);
    const lapsed = await claimUnpublished(outbox.db, SCHEMA, 100, LEASE_MS);
    let current = await claimUnpublished(outbox.db, SCHEMA, 100, LEASE_MS);
    expect(current.events).toEqual([]);
    await until(async () => {
      current = await claimUnpublished(outbox.db, SCHEMA, 100, 60_000);
      return current.events.length > 0;
    }, "the lapsed claim's rows claimed again");

    await settleClaim(
      outbox.db,
      SCHEMA,
      lapsed,
      lapsed.events.map((e) => e.id),
    );
    expect(await unpublished()).toBe(2);
    await settleClaim(outbox.db, SCHEMA, current, [current.events[0].id]);
    expect(await unpublished()).toBe(1);
    // The row whose publish failed is released at once, not held until the lease ends.
    const retry = await claimUnpublished(outbox.db, SCHEMA, 100, 60_000);
    expect(retry.events.map((e) => e.id)).toEqual([current.events[1].id]);
  });
});
