/**
 * Builds the broker of one process from the typed config: the services named in SERVICES,
 * the transporter (none when embedded), and a stop that also closes the shared database.
 */
import { ServiceBroker, type BrokerOptions } from "moleculer";
import { brokerOptions } from "../../moleculer.config";
import { setConfig, type Config } from "../config";
import { closeDatabase } from "../db";
import { schemaOf } from "./services";

export function createBroker(cfg: Config, overrides: Partial<BrokerOptions> = {}): ServiceBroker {
  setConfig(cfg);
  const broker = new ServiceBroker({ ...brokerOptions(cfg), ...overrides });
  for (const name of cfg.services) broker.createService(schemaOf(name));
  return broker;
}

export async function stopBroker(broker: ServiceBroker): Promise<void> {
  await broker.stop();
  await closeDatabase();
}
