/**
 * Makes the broker know when NATS is gone. moleculer 0.15's NATS transporter keeps saying
 * "connected" while nats.js reconnects, and nats.js buffers what is published meanwhile: a
 * request sent during an outage waited its whole time-out (10 s) and could still be executed
 * after its caller had given up. Following nats.js's own status instead, the transporter is
 * "disconnected" from the first moment: a request is refused at once (BrokerDisconnectedError,
 * a 503 at the gateway), /readyz says so (shared/observability/readiness.ts reads the same flag), and both come
 * back on reconnection.
 *
 * On reconnection it also does what moleculer's transit does after a reconnect its transporter
 * reports (`afterConnect(wasReconnect)`), which 0.15's NATS transporter never reports: it
 * announces this node (INFO) and asks every node to announce itself (DISCOVER). An outage longer
 * than the heartbeat time-out removed every remote node from the registry; without this the
 * nodes came back one heartbeat later each, and the gateway answered 503 for up to two more
 * heartbeat intervals after NATS was back.
 */
import type { Middleware, ServiceBroker } from "moleculer";

interface NatsStatus {
  type: string;
}

/**
 * How long nats.js waits between two reconnection attempts (its default is 2 s): how late, at
 * most, a process notices that NATS is back. The broker's and the channels' connections use it.
 */
export const NATS_RECONNECT_WAIT_MS = 500;

/** The parts of moleculer's NATS transporter this module reads and sets. */
interface NatsTransporter {
  connected: boolean;
  client?: { status(): AsyncIterable<NatsStatus> };
}

/** The part of moleculer's discoverer used after a reconnection. */
interface Discoverer {
  sendLocalNodeInfo(): Promise<unknown>;
  discoverAllNodes(): Promise<unknown>;
}

function rediscover(broker: ServiceBroker): void {
  const discoverer = (broker.registry as unknown as { discoverer?: Discoverer }).discoverer;
  if (!discoverer) return;
  // Not awaited: the status loop goes on; a lost packet is made up by the next heartbeat.
  Promise.resolve()
    .then(() => discoverer.sendLocalNodeInfo())
    .then(() => discoverer.discoverAllNodes())
    .catch((err: unknown) =>
      broker.logger.warn({ err }, "announcing this node after the NATS reconnection failed; heartbeats will"),
    );
}

async function followStatus(
  broker: ServiceBroker,
  tx: NatsTransporter & { client: NonNullable<NatsTransporter["client"]> },
): Promise<void> {
  for await (const s of tx.client.status()) {
    if (s.type === "disconnect" && tx.connected) {
      tx.connected = false;
      broker.logger.warn("NATS connection lost: remote calls are refused (503) until it is back");
    } else if (s.type === "reconnect" && !tx.connected) {
      tx.connected = true;
      broker.logger.info("NATS connection back");
      rediscover(broker);
    }
  }
}

export const transporterConnectionMiddleware: Middleware = {
  name: "TransporterConnection",
  started(broker: ServiceBroker) {
    const tx = broker.transit?.tx as unknown as NatsTransporter | undefined;
    // Runs for the life of the connection: not awaited.
    if (tx?.client)
      void followStatus(broker, tx as Parameters<typeof followStatus>[1]).catch((err: unknown) =>
        broker.logger.error({ err }, "following the NATS status failed"),
      );
    return Promise.resolve();
  },
};
