/**
 * Which schema each service name runs (the runner picks from here with SERVICES=), and what each
 * service publishes about itself for the API reference: its schema and the exports of its
 * `<name>.openapi.ts`. The gateway is handed that list, so it imports no service
 * (docs/architecture.md, "Import rules").
 */
import type { ServiceSchema } from "moleculer";
import type { Config } from "../shared/config/config";
import type { ServiceName } from "../shared/config/variables";
import { settingsOf } from "./settings-from-config";
import { gatewaySchema } from "../gateway/gateway.service";
import type { ServiceDescription } from "../gateway/openapi/service-description";
import { webhookBodySchemas } from "../gateway/openapi/webhooks";
import { SECURE_SETTINGS } from "../shared/service-settings";
import clientsService from "../services/clients/clients.service";
import * as clientsOpenApi from "../services/clients/clients.openapi";
import crmService from "../services/crm/crm.service";
import * as crmOpenApi from "../services/crm/crm.openapi";
import catalogueService from "../services/catalogue/catalogue.service";
import * as catalogueOpenApi from "../services/catalogue/catalogue.openapi";
import referencesService from "../services/references/references.service";
import * as referencesOpenApi from "../services/references/references.openapi";
import ordersService from "../services/orders/orders.service";
import * as ordersOpenApi from "../services/orders/orders.openapi";
import * as orderImportsOpenApi from "../services/orders/orders.imports.openapi";
import webhooksService from "../services/webhooks/webhooks.service";
import * as webhooksOpenApi from "../services/webhooks/webhooks.openapi";
import * as webhooksEventsOpenApi from "../services/webhooks/webhooks.events.openapi";

type BusinessService = Exclude<ServiceName, "gateway">;

/** In the order the document lists their component schemas. */
const BUSINESS_SERVICES: Record<BusinessService, Omit<ServiceDescription, "name">> = {
  orders: { schema: ordersService as ServiceSchema, components: { ...ordersOpenApi, ...orderImportsOpenApi } },
  crm: { schema: crmService as ServiceSchema, components: crmOpenApi },
  catalogue: { schema: catalogueService as ServiceSchema, components: catalogueOpenApi },
  references: { schema: referencesService as ServiceSchema, components: referencesOpenApi },
  webhooks: {
    schema: webhooksService as ServiceSchema,
    components: { ...webhooksOpenApi, ...webhooksEventsOpenApi },
  },
  clients: { schema: clientsService as ServiceSchema, components: clientsOpenApi },
};

export const SERVICE_DESCRIPTIONS: readonly ServiceDescription[] = Object.entries(BUSINESS_SERVICES).map(
  ([name, description]) => ({ name, ...description }),
);

/**
 * What a service is built with that only this root can give: the webhooks service's event
 * catalogue (`GET /webhooks/event_types`) shows each event body's schema, the one the API
 * reference's `webhooks` section uses, from its producer's `<name>.openapi.ts`. Moleculer
 * leaves it out of the description it announces to other nodes: large, and of use to no other.
 */
function fromTheRoot(name: BusinessService): Record<string, unknown> {
  if (name !== "webhooks") return {};
  return {
    eventBodies: webhookBodySchemas(SERVICE_DESCRIPTIONS),
    $secureSettings: [...SECURE_SETTINGS, "eventBodies"],
  };
}

/** The schema of the named service with the settings `cfg` gives it (runtime/settings-from-config.ts). */
export function schemaOf(name: ServiceName, cfg: Config): ServiceSchema {
  if (name === "gateway") return gatewaySchema(SERVICE_DESCRIPTIONS, cfg) as ServiceSchema;
  const schema = BUSINESS_SERVICES[name].schema as ServiceSchema;
  return { ...schema, settings: { ...schema.settings, ...settingsOf(name, cfg), ...fromTheRoot(name) } };
}
