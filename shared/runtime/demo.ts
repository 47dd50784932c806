import type { ServiceBroker } from "moleculer";
import type { Config } from "../config";
export async function seedDemoDataIfWanted(_broker: ServiceBroker, _cfg: Config): Promise<void> {}
