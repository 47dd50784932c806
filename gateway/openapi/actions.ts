/**
 * Where the document finds each routed action's definition (`params`, `scope`, `summary`,
 * `visibility`): in the service schemas themselves, imported as data.
 *
 * Why not the broker registry: in the distributed mode the gateway's registry knows only the
 * actions of the nodes connected at that moment, so the document would change as service
 * processes come and go (and be incomplete while one restarts), and the unit test would need a
 * running broker with every service. The schemas are in this one codebase and image anyway
 * (runtime/services.ts imports them all), importing one starts nothing, and the
 * document is the same everywhere. There is no second copy: what the action validates with is
 * what the document shows.
 */
import type { ActionSchema, ServiceSchema } from "moleculer";
import catalogueService from "../../services/catalogue/catalogue.service";
import clientsService from "../../services/clients/clients.service";
import crmService from "../../services/crm/crm.service";
import ordersService from "../../services/orders/orders.service";
import referencesService from "../../services/references/references.service";
import webhooksService from "../../services/webhooks/webhooks.service";
import type { Scope } from "../../shared/auth";
import "../../shared/types";
import type { FvSchema } from "./fastest-to-json-schema";

const SERVICE_SCHEMAS: Record<string, ServiceSchema> = {
  orders: ordersService as ServiceSchema,
  crm: crmService as ServiceSchema,
  catalogue: catalogueService as ServiceSchema,
  references: referencesService as ServiceSchema,
  webhooks: webhooksService as ServiceSchema,
  clients: clientsService as ServiceSchema,
};

export interface ActionDefinition {
  name: string;
  params: FvSchema;
  scope?: Scope;
  summary?: string;
  visibility?: string;
}

/** The definition of `<service>.<action>`, or null when that service does not define it (yet). */
export function actionDefinition(fullName: string): ActionDefinition | null {
  const dot = fullName.indexOf(".");
  const schema = SERVICE_SCHEMAS[fullName.slice(0, dot)];
  const action = schema?.actions?.[fullName.slice(dot + 1)];
  if (!action || typeof action !== "object") return null;
  const a = action as ActionSchema;
  return {
    name: fullName,
    params: (a.params ?? {}) as FvSchema,
    scope: a.scope,
    summary: a.summary,
    visibility: a.visibility,
  };
}
