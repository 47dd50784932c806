/**
 * Replicas of one service that start together each subscribe to every channel with the same
 * durable JetStream consumer (the service name is the group). Both find no consumer and create
 * it at once; the second creation used to fail with "consumer name already in use" and that
 * replica did not start. Real NATS (TEST_NATS_URL); streams removed after.
 */
import { ServiceBroker } from "moleculer";
import type { Config } from "../../shared/config/config";
import { ALL_CHANNELS, channelsMiddleware } from "../../shared/messaging/channels";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";
import { namespacePrefix } from "../helpers/test-run";

const natsUrl = process.env.TEST_NATS_URL;
const REPLICAS = 3;
const ROUNDS = 4;
const namespace = `${namespacePrefix()}consumers-${process.pid}`;

jest.setTimeout(60_000);

const describeWithNats = requires(["nats"]).describe;

/** Channel messages received, by round. */
const received: unknown[][] = [];

/** A broker like a `webhooks` replica's, as far as channels go: the same middleware, consumers of every channel. */
function replica(round: number, n: number): ServiceBroker {
  const broker = new ServiceBroker({
    namespace: `${namespace}-${round}`,
    nodeID: `replica-${round}-${n}`,
    logger: false,
    middlewares: [channelsMiddleware({ transporter: natsUrl } as Config)],
  });
  broker.createService({
    name: "webhooks",
    channels: Object.fromEntries(
      ALL_CHANNELS.map((channel) => [
        channel,
        { handler: async (payload: unknown) => void received[round].push(payload) },
      ]),
    ),
  } as never);
  return broker;
}

describeWithNats("when several replicas of a service start at the same moment", () => {
  afterAll(async () => {
    await deleteStreams(natsUrl!, namespace);
  });

  it("then every one of them starts and consumes", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      received[round] = [];
      const brokers = Array.from({ length: REPLICAS }, (_, n) => replica(round, n));
      try {
        const started = await Promise.allSettled(brokers.map((b) => b.start()));
        expect(started.map((s) => (s.status === "rejected" ? String(s.reason) : "started"))).toEqual(
          Array(REPLICAS).fill("started"),
        );
        // The group shares one consumer: a message is handled once, by one of them.
        await (brokers[0] as unknown as { sendToChannel(name: string, payload: unknown): Promise<void> }).sendToChannel(
          ALL_CHANNELS[0],
          { round },
        );
        while (received[round].length === 0) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 200));
        expect(received[round]).toEqual([{ round }]);
      } finally {
        await Promise.allSettled(brokers.map((b) => b.stop()));
      }
    }
  });
});
