/**
 * The outbox relay is woken by its own process's commits and polls only as a fallback
 * (shared/messaging/outbox-relay.mixin.ts): with an interval far longer than any test, events
 * still go out at once after a commit, once publishing works again after failures, and once the
 * channel adapter connects. The "brokers" are stand-ins (test/helpers/relay-harness.ts); the
 * outbox is a real table.
 */
import type { ServiceBroker } from "moleculer";
import { outboxRow } from "../../shared/messaging/outbox";
import { OutboxRelay } from "../../shared/messaging/outbox-relay.mixin";
import {
  appendEvents,
  brokerStub,
  silentLogger,
  unpublishedCount,
  until,
  useRelayOutbox,
} from "../helpers/relay-harness";

const SCHEMA = "outbox_wake_test";
/** Far beyond the tests' deadlines: whatever they see published was not found by the fallback round. */
const NEVER_MS = 600_000;

describe("outbox relay wake-ups and fallback", () => {
  const outbox = useRelayOutbox(SCHEMA);
  let relay: OutboxRelay | undefined;
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
  });

  const started = (broker: ServiceBroker, intervalMs: number) => {
    relay = new OutboxRelay({ broker, db: outbox.db, schema: SCHEMA, logger: silentLogger, intervalMs });
    relay.start();
    return relay;
  };
  /** An event as another process's commit leaves it: this process's relay is not told. */
  const insertWithoutWakeUp = () =>
    outbox.db
      .withSchema(SCHEMA)
      .table("outbox")
      .insert(outboxRow({ event: "sales_order_validated", ownerClientId: 7, entityId: 1, data: {} }));
  const allPublished = async () => (await unpublishedCount(outbox.db, SCHEMA)) === 0;

  it("when this process commits an event, then the relay publishes it at once, without waiting for its interval", async () => {
    const stub = brokerStub(() => Promise.resolve());
    await insertWithoutWakeUp();
    started(stub.broker, NEVER_MS);
    // The first round runs at start and publishes that row; from then on only a wake-up can
    // publish anything before the interval ends.
    await until(allPublished, "the first round");
    await appendEvents(outbox.db, SCHEMA, 2);
    await until(allPublished, "the committed events published");
    expect(stub.published).toHaveLength(3);
  });

  it("when a row was written by another process (no wake-up here), then the fallback round publishes it", async () => {
    const stub = brokerStub(() => Promise.resolve());
    await insertWithoutWakeUp();
    started(stub.broker, 200);
    await until(allPublished, "the first round");
    await insertWithoutWakeUp();
    await until(allPublished, "the other process's row published by the fallback round");
    expect(stub.published).toHaveLength(2);
  });

  it("when publishing failed and works again, then the relay retries within its back-off, not its interval", async () => {
    let failures = 3;
    const stub = brokerStub(async () => {
      if (failures-- > 0) throw new Error("503 no responders");
    });
    started(stub.broker, NEVER_MS);
    await appendEvents(outbox.db, SCHEMA, 1);
    await until(allPublished, "the event published once NATS answers");
    expect(stub.published).toHaveLength(4);
  });

  it("when events are committed before the channel adapter connects, then they go out once it does", async () => {
    const stub = brokerStub(() => Promise.resolve());
    const adapter = (stub.broker as unknown as { channelAdapter: { connected: boolean } }).channelAdapter;
    adapter.connected = false;
    started(stub.broker, NEVER_MS);
    await appendEvents(outbox.db, SCHEMA, 1);
    expect(await unpublishedCount(outbox.db, SCHEMA)).toBe(1);
    adapter.connected = true;
    await until(allPublished, "the event published once the adapter is connected");
  });
});
