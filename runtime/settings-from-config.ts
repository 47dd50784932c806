/**
 * The settings each service is built with, taken from the configuration here, at the top, so
 * the services and shared/ never read it (shared/service-settings.ts says why). A test builds
 * a service with other settings by handing createBroker another Config (test/helpers/broker.ts).
 */
import type { Config } from "../shared/config/config";
import type { ServiceName } from "../shared/config/variables";
import { storageSettingsOf, type StorageSettings } from "../shared/service-settings";
import type { ClientsSettings } from "../services/clients/clients.service";
import type { OrdersSettings } from "../services/orders/orders.service";
import type { WebhooksSettings } from "../services/webhooks/webhooks.service";

type BusinessService = Exclude<ServiceName, "gateway">;

const SETTINGS: { [name in BusinessService]: (cfg: Config) => StorageSettings } = {
  catalogue: storageSettingsOf,
  crm: storageSettingsOf,
  references: storageSettingsOf,
  clients: (cfg): ClientsSettings => ({
    ...storageSettingsOf(cfg),
    adminApiKey: cfg.adminApiKey,
    portal: {
      linkTtlMs: cfg.portal.linkTtlMs,
      sessionTtlMs: cfg.portal.sessionTtlMs,
      publicBaseUrl: cfg.publicBaseUrl,
    },
  }),
  orders: (cfg): OrdersSettings => ({ ...storageSettingsOf(cfg), orderImports: cfg.orderImports }),
  // The event bodies' schemas come from the root's service descriptions, not the configuration (runtime/services.ts).
  webhooks: (cfg): Omit<WebhooksSettings, "eventBodies"> => ({
    ...storageSettingsOf(cfg),
    webhooks: cfg.webhooks,
    secrets: { databaseUrl: cfg.databaseUrl, secretsEncryptionKeys: cfg.secretsEncryptionKeys },
  }),
};

/** For `broker.createService(schema, { settings })`: Moleculer merges them into the schema's own. */
export function settingsOf(name: BusinessService, cfg: Config): StorageSettings {
  return SETTINGS[name](cfg);
}
