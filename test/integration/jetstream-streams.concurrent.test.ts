/**
 * Processes that start at the same moment each make the event contract's streams match their
 * settings (shared/messaging/jetstream-streams.ts), and so each may find a stream missing and
 * create it at once. nats-server checks a new stream's name and its subjects one after the
 * other, not atomically: the creation that loses the race is refused with "subjects overlap with
 * an existing stream" (or, when the settings differ, "stream name already in use"), and that
 * process did not start (a CI run lost a `crm` process this way). Real NATS (TEST_NATS_URL);
 * every stream removed after.
 */
import { connect, type NatsConnection } from "nats";
import { ensureStreams, type StreamSpec } from "../../shared/messaging/jetstream-streams";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";
import { namespacePrefix } from "../helpers/test-run";

const natsUrl = process.env.TEST_NATS_URL;
/** Processes starting together, each with a connection of its own, as replicas have. */
const PROCESSES = 8;
/** Fresh streams raced for: the loser's window is short (about one round in a hundred lost it here). */
const ROUNDS = 300;
const prefix = `${namespacePrefix()}streams-race-${process.pid}`;
const HOUR_NS = 3600 * 1e9;

jest.setTimeout(60_000);

const describeWithNats = requires(["nats"]).describe;

/** Two streams a round, as a process ensures several one after the other. */
const specsOf = (round: number): StreamSpec[] =>
  ["order-created", "order-validated"].map((event) => ({
    name: `${prefix}-${round}_${event}`,
    subjects: [`${prefix}-${round}.${event}`],
    maxAgeNs: HOUR_NS,
  }));

describeWithNats("when several processes make the same missing streams match at the same moment", () => {
  let connections: NatsConnection[] = [];

  beforeAll(async () => {
    connections = await Promise.all(
      Array.from({ length: PROCESSES }, (_, n) => connect({ servers: natsUrl!, name: `oi-test-streams-${n}` })),
    );
  });

  afterAll(async () => {
    await Promise.all(connections.map((c) => c.close()));
    await deleteStreams(natsUrl!, prefix);
  });

  it("then every one of them succeeds, each stream exists once with the settings asked for", async () => {
    const managers = await Promise.all(connections.map((c) => c.jetstreamManager()));
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const specs = specsOf(round);
      const outcomes = await Promise.allSettled(
        managers.map((jsm) => ensureStreams(jsm, specs, "auto", {}, () => undefined)),
      );
      for (const outcome of outcomes)
        if (outcome.status === "rejected") failures.push(`round ${round}: ${(outcome.reason as Error).message}`);
      for (const spec of specs) {
        const { config } = await managers[0].streams.info(spec.name);
        expect({ subjects: config.subjects, max_age: config.max_age, replicas: config.num_replicas }).toEqual({
          subjects: spec.subjects,
          max_age: spec.maxAgeNs,
          replicas: 1,
        });
      }
    }
    expect(failures).toEqual([]);
  });
});
