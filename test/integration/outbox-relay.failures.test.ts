/**
 * The outbox relay while publishing fails (shared/messaging/outbox-relay.mixin.ts): it backs off
 * and commits do not wake it early, it logs once instead of once per round, and a publish that
 * is never acknowledged holds its batch only for the publish time-out. The "brokers" are
 * stand-ins (test/helpers/relay-harness.ts); the outbox is a real table.
 */
import type { ServiceBroker } from "moleculer";
import { OutboxRelay, PUBLISH_ACK_TIMEOUT_MS } from "../../shared/messaging/outbox-relay.mixin";
import { FAILURE_SUMMARY_INTERVAL_MS } from "../../shared/messaging/outbox-relay-health";
import {
  appendEvents,
  brokerStub,
  recordingLogger,
  unpublishedCount,
  until,
  useRelayOutbox,
} from "../helpers/relay-harness";

const SCHEMA = "outbox_failures_test";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("outbox relay when publishing fails", () => {
  const outbox = useRelayOutbox(SCHEMA);

  const relayOn = (broker: ServiceBroker, logger = recordingLogger().logger, leaseMs = 30_000) =>
    new OutboxRelay({ broker, db: outbox.db, schema: SCHEMA, logger, intervalMs: 20, leaseMs });

  it("when every publish fails while orders keep committing, then the relay backs off instead of a round per commit, logs one line, and publishes everything once NATS answers", async () => {
    let natsAnswers = false;
    const stub = brokerStub(async () => {
      if (!natsAnswers) throw new Error("503 no responders");
    });
    const { logger, warnings } = recordingLogger();
    const relay = relayOn(stub.broker, logger);
    const [first] = await appendEvents(outbox.db, SCHEMA, 1);
    const startedAt = Date.now();
    relay.start();
    try {
      // A commit every 30 ms for 3 s (longer on a busy machine): each used to wake the relay for another failing round.
      for (let i = 0; i < 100; i++) {
        await appendEvents(outbox.db, SCHEMA, 1);
        await sleep(30);
      }
      const failingMs = Date.now() - startedAt;
      // Every round publishes the oldest event first: its publishes count the rounds (at most one a second once backed off).
      const rounds = stub.published.filter((p) => p.event.entityId === first).length;
      expect(rounds).toBeGreaterThan(1);
      expect(rounds).toBeLessThanOrEqual(15 + Math.ceil(failingMs / 1000));
      // One line when it starts failing, then one summary per FAILURE_SUMMARY_INTERVAL_MS while it
      // goes on: however long the loop took, never a line per round.
      const [started, ...summaries] = warnings;
      expect(started).toMatch(
        /^Outbox relay of "outbox_failures_test": publishing \d+ event\(s\) failed, will retry: 503 no responders$/,
      );
      expect(summaries.length).toBeLessThanOrEqual(Math.floor(failingMs / FAILURE_SUMMARY_INTERVAL_MS));
      for (const line of summaries)
        expect(line).toMatch(
          /^Outbox relay of "outbox_failures_test": \d+ more failure\(s\) in \d+ s \(503 no responders\); /,
        );

      natsAnswers = true;
      await until(
        async () => (await unpublishedCount(outbox.db, SCHEMA)) === 0,
        "every event published once NATS answers",
      );
    } finally {
      await relay.stop();
    }
  });

  it("when one publish is never acknowledged, then the round settles the others after the publish time-out, long before its lease ends, and the stuck one goes again", async () => {
    const [, stuck] = await appendEvents(outbox.db, SCHEMA, 3);
    let acknowledgeAll = false;
    // As JetStream does: an unacknowledged publish fails once the time-out the relay asked for is over.
    const stub = brokerStub((event, publish) =>
      event.entityId !== stuck || acknowledgeAll
        ? Promise.resolve()
        : new Promise<void>((_, reject) => setTimeout(() => reject(new Error("TIMEOUT")), publish.timeout)),
    );
    const leaseMs = 20_000;
    const relay = relayOn(stub.broker, recordingLogger().logger, leaseMs);

    const startedAt = Date.now();
    expect(await relay.relayOnce()).toBe(2);
    expect(Date.now() - startedAt).toBeLessThan(leaseMs);
    expect(stub.published.map((p) => p.timeout)).toEqual([
      PUBLISH_ACK_TIMEOUT_MS,
      PUBLISH_ACK_TIMEOUT_MS,
      PUBLISH_ACK_TIMEOUT_MS,
    ]);
    expect(await unpublishedCount(outbox.db, SCHEMA)).toBe(1);

    acknowledgeAll = true;
    expect(await relay.relayOnce()).toBe(1);
    const stuckPublishes = stub.published.filter((p) => p.event.entityId === stuck);
    expect(stuckPublishes).toHaveLength(2);
    // The same msgID both times: had the first been stored after all, JetStream keeps one.
    expect(stuckPublishes[1].msgID).toBe(stuckPublishes[0].msgID);
    expect(await unpublishedCount(outbox.db, SCHEMA)).toBe(0);
  });
});
