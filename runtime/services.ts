/**
 * Which schema each service name runs. The runner picks from here with SERVICES=.
 */
import type { ServiceSchema } from "moleculer";
import type { ServiceName } from "../shared/config";
import { gatewaySchema } from "../gateway/gateway.service";
import clientsService from "../services/clients/clients.service";
import crmService from "../services/crm/crm.service";
import catalogueService from "../services/catalogue/catalogue.service";
import referencesService from "../services/references/references.service";
import ordersService from "../services/orders/orders.service";
import webhooksService from "../services/webhooks/webhooks.service";

const SCHEMAS: Record<ServiceName, () => ServiceSchema> = {
  gateway: () => gatewaySchema() as ServiceSchema,
  clients: () => clientsService as ServiceSchema,
  crm: () => crmService as ServiceSchema,
  catalogue: () => catalogueService as ServiceSchema,
  references: () => referencesService as ServiceSchema,
  orders: () => ordersService as ServiceSchema,
  webhooks: () => webhooksService as ServiceSchema,
};

export function schemaOf(name: ServiceName): ServiceSchema {
  return SCHEMAS[name]();
}
