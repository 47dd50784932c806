/**
 * What a service tells the API reference about itself: its schema (the actions' `params`,
 * `scope`, `summary`, `visibility`) and the component schemas of its `<name>.openapi.ts`.
 *
 * The gateway never imports a service to learn this: the composition root, which knows which
 * services exist, hands the list in (runtime/services.ts), so gateway/ depends on
 * no service folder and a test can build the document from any set of services.
 */
import type { ServiceSchema } from "moleculer";
import type { JsonSchema } from "./fastest-to-json-schema";

export interface ServiceDescription {
  /** The service name, which is also the prefix of its actions (`orders` → `orders.create`). */
  name: string;
  schema: Partial<ServiceSchema>;
  /** Every export of the service's `<name>.openapi.ts`: a component schema of the same name. */
  components: Record<string, JsonSchema>;
}
