/**
 * The demo of `npm run start:cluster`: the same data, keys and curl lines as `npm start`, seeded
 * through the running services over NATS by a broker of the runner's own that hosts no service
 * (the children are started with the default DEMO_DATA=auto, which seeds only embedded).
 */
import { ServiceBroker } from "moleculer";
import { brokerOptions } from "../../moleculer.config";
import type { Config } from "../../shared/config/config";
import { clusterDemoWanted, seedDemoData } from "./demo";

export async function seedClusterDemo(cfg: Config, log: (line: string) => void): Promise<void> {
  if (!clusterDemoWanted(cfg)) return;
  const broker = new ServiceBroker({
    ...brokerOptions(cfg),
    nodeID: `${cfg.nodeId || "cluster"}-demo-${process.pid}`,
    middlewares: [],
  });
  try {
    await broker.start();
    await seedDemoData(broker, cfg);
  } catch (err) {
    log(`the demo data could not be seeded: ${(err as Error).message}`);
  } finally {
    await broker.stop().catch(() => undefined);
  }
}
