/**
 * The per-client limit holds across gateway replicas: two gateways on one NATS, a client's
 * requests alternating between them, accept the limit once — not once per replica. The two
 * replicas are two brokers (nodes) in this test's process, each with its own HTTP server; the
 * end-to-end tests run gateways as separate processes.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";
import { namespacePrefix } from "../helpers/test-run";

const NATS_URL = process.env.TEST_NATS_URL;
const describeWithNats = requires(["nats"]).describe;

const LIMIT = 300;
const CONCURRENCY = 8;

function baseUrlOf(t: TestBroker): string {
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Until `broker` knows a gateway on another node (so its broadcasts reach it). */
async function untilOtherGatewayKnown(t: TestBroker): Promise<void> {
  for (;;) {
    const services = t.broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }) as {
      name: string;
      nodeID: string;
    }[];
    if (services.some((s) => s.name === "gateway" && s.nodeID !== t.broker.nodeID)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeWithNats("rate limiting across two gateway replicas (two brokers in this process, on one NATS)", () => {
  let first: TestBroker;
  let second: TestBroker;
  const namespace = `${namespacePrefix()}rl-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    const env = { TRANSPORTER: NATS_URL!, NAMESPACE: namespace, RATE_LIMIT_PER_MINUTE: String(LIMIT) };
    first = await startTestBroker({ services: ["gateway", "clients"], env: { ...env, NODE_ID: "gateway-1" } });
    second = await startTestBroker({
      services: ["gateway"],
      env: { ...env, NODE_ID: "gateway-2" },
      database: first.database,
    });
    await second.broker.waitForServices(["clients"]);
    await Promise.all([untilOtherGatewayKnown(first), untilOtherGatewayKnown(second)]);
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
    // The streams the clients service's channels created in this namespace.
    await deleteStreams(NATS_URL!, namespace);
  });

  it("when a client's requests alternate between the two gateways, then together they accept at least the limit and at most 10 % more", async () => {
    const { apiKey } = await first.call<{ apiKey: string }>("clients.create", { name: "spread", kind: "admin" });
    const gateways = [baseUrlOf(first), baseUrlOf(second)];
    const statuses = new Map<number, number>();
    const rejectedBy = [0, 0];
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < 2 * LIMIT; i = next++) {
        const g = i % 2;
        const res = await fetch(`${gateways[g]}/api/v1/clients?limit=1`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 429) rejectedBy[g]++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    const accepted = statuses.get(200) ?? 0;
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    expect(accepted).toBeGreaterThanOrEqual(LIMIT);
    expect(accepted).toBeLessThanOrEqual(LIMIT * 1.1);
    // Each replica refused some: each learnt of the other's usage.
    expect(rejectedBy[0]).toBeGreaterThan(0);
    expect(rejectedBy[1]).toBeGreaterThan(0);
  });
});
