/**
 * Makes the broker know when NATS is gone. moleculer 0.15's NATS transporter keeps saying
 * "connected" while nats.js reconnects, and nats.js buffers what is published meanwhile: a
 * request sent during an outage waited its whole time-out (10 s) and could still be executed
 * after its caller had given up. Following nats.js's own status instead, the transporter is
 * "disconnected" from the first moment: a request is refused at once (BrokerDisconnectedError,
 * a 503 at the gateway), /readyz says so (shared/health.ts reads the same flag), and both come
 * back on reconnection. Heartbeats and discovery resume by themselves (moleculer re-discovers
 * a node whose heartbeat arrives again).
 */
import type { Middleware, ServiceBroker } from "moleculer";

interface NatsStatus {
  type: string;
}

/** The parts of moleculer's NATS transporter this module reads and sets. */
interface NatsTransporter {
  connected: boolean;
  client?: { status(): AsyncIterable<NatsStatus> };
}

async function followStatus(broker: ServiceBroker, tx: NatsTransporter & { client: NonNullable<NatsTransporter["client"]> }): Promise<void> {
  for await (const s of tx.client.status()) {
    if (s.type === "disconnect" && tx.connected) {
      tx.connected = false;
      broker.logger.warn("NATS connection lost: remote calls are refused (503) until it is back");
    } else if (s.type === "reconnect" && !tx.connected) {
      tx.connected = true;
      broker.logger.info("NATS connection back");
    }
  }
}

export const transporterConnectionMiddleware: Middleware = {
  name: "TransporterConnection",
  async started(broker: ServiceBroker) {
    const tx = broker.transit?.tx as unknown as NatsTransporter | undefined;
    if (!tx?.client) return;
    // Runs for the life of the connection: not awaited.
    void followStatus(broker, tx as Parameters<typeof followStatus>[1]).catch((err: unknown) => broker.logger.error({ err }, "following the NATS status failed"));
  },
};
