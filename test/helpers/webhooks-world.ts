/**
 * The stage of an end-to-end webhooks test: a private NATS JetStream, a PostgreSQL database that
 * several processes share, this process as the event-raising service over that NATS (an outbox
 * and its relay: test/helpers/event-source.ts, and the gateway's calls), and webhooks processes
 * (dist/, spawned). Needs PostgreSQL: the embedded fallback cannot be shared by processes.
 */
import { startTestBroker, type TestBroker } from "./broker";
import { createTestDatabase, type TestDatabase } from "./database";
import { addEventSource, type EventSource } from "./event-source";
import { NatsServer } from "./nats-server";
import { disposeAll, ServiceProcess } from "./processes";

export interface WebhooksWorld {
  nats: NatsServer;
  database: TestDatabase;
  t: TestBroker;
  source: EventSource;
  /**
   * Starts webhooks processes with these names, one after the other (two replicas creating one
   * durable consumer at once may fail to start), and waits until this broker sees the service.
   */
  startWebhooks(names: string[], env: Record<string, string>): Promise<ServiceProcess[]>;
  /** Stops everything it started and drops the database. */
  dispose(): Promise<void>;
}

/** `name` names this process's node and its outbox schema. */
export async function startWebhooksWorld(name: string): Promise<WebhooksWorld> {
  const database = await createTestDatabase();
  if (database.kind === "pglite")
    throw new Error("These tests need PostgreSQL shared by several processes: set TEST_DATABASE_URL.");
  const nats = await NatsServer.start();
  const t = await startTestBroker({
    services: [],
    database,
    env: { TRANSPORTER: nats.url, NODE_ID: `e2e-${name}`, OUTBOX_RELAY_INTERVAL_MS: "100" },
  });
  const source = await addEventSource(t.broker, `e2e_${name.replace(/-/g, "_")}`);
  const processes: ServiceProcess[] = [];
  return {
    nats,
    database,
    t,
    source,
    async startWebhooks(names, env) {
      const started: ServiceProcess[] = [];
      for (const processName of names) {
        const p = await ServiceProcess.create({
          name: processName,
          services: ["webhooks"],
          transporter: nats.url,
          databaseUrl: database.url,
          env,
        });
        processes.push(p);
        await p.start();
        started.push(p);
      }
      await t.broker.waitForServices(["webhooks"], 30_000);
      return started;
    },
    async dispose() {
      await disposeAll(processes);
      await t.stop();
      await nats.dispose();
      await database.drop();
    },
  };
}
