/**
 * Issue 26 — the event pipeline on a real NATS cluster: three `nats-server` processes with
 * JetStream clustering on loopback, the distributed mode on them (TRANSPORTER lists all three),
 * PostgreSQL, and a receiver subscribed to sales_order_created and sales_order_validated
 * (test/helpers/nats-cluster-drill.ts). Without any setting the streams and their consumers
 * get three replicas; the node that leads the project's streams is killed (SIGKILL) under load
 * and started again, and every accepted order's webhooks arrive, none twice.
 *
 * How long deliveries pause is printed, not asserted (a busy CI machine): `npm run
 * bench:nats-cluster` measures it (bench/README.md). Needs TEST_DATABASE_URL and nats-server.
 */
import { requires } from "../helpers/prerequisites";
import { leaderKillDrill, startClusterDrill, type ClusterDrill } from "../helpers/nats-cluster-drill";

jest.setTimeout(120_000);

// Three private nats-server processes and PostgreSQL shared by several processes: CI has both.
const describeWithServers = requires(["postgres", "nats-server"]).describe;

describeWithServers("the event pipeline on a three-node NATS cluster (real processes, PostgreSQL)", () => {
  let drill: ClusterDrill;

  beforeAll(async () => {
    drill = await startClusterDrill();
  }, 120_000);
  afterAll(async () => {
    await drill?.stop();
  });

  it("when the processes have started without JETSTREAM_REPLICAS, then every stream and every durable consumer has 3 replicas", async () => {
    const streams = await drill.nats.streams();
    expect(streams.length).toBeGreaterThan(0);
    const replicas = (cluster: { leader?: string; replicas?: unknown[] } | undefined) =>
      (cluster?.leader ? 1 : 0) + (cluster?.replicas?.length ?? 0);
    for (const stream of streams) {
      expect({
        stream: stream.config.name,
        configured: stream.config.num_replicas,
        placed: replicas(stream.cluster),
      }).toEqual({
        stream: stream.config.name,
        configured: 3,
        placed: 3,
      });
      for (const consumer of await drill.nats.consumers(stream.config.name))
        expect({ consumer: `${stream.config.name}/${consumer.name}`, placed: replicas(consumer.cluster) }).toEqual({
          consumer: `${stream.config.name}/${consumer.name}`,
          placed: 3,
        });
    }
  });

  it("when the node leading the streams is killed (SIGKILL) under load and started again, then every accepted order's webhooks arrive, none twice", async () => {
    const result = await leaderKillDrill(drill, `nc-${Date.now().toString(36)}`, {
      perSecond: 10,
      beforeMs: 4_000,
      downMs: 8_000,
      afterMs: 4_000,
      deliveryTimeoutMs: 45_000,
    });
    console.log(result.line);
    expect(result.orders.created.length).toBeGreaterThan(0);
    expect(result.orders.validated.length).toBeGreaterThan(0);
    expect(result.missing).toEqual([]);
    expect(result.duplicates).toEqual([]);
  });
});
