/**
 * Where the document finds each routed action's definition (`params`, `scope`, `summary`,
 * `visibility`): in the service schemas themselves, imported as data.
 *
 * Why not the broker registry: in the distributed mode the gateway's registry knows only the
 * actions of the nodes connected at that moment, so the document would change as service
 * processes come and go (and be incomplete while one restarts), and the unit test would need a
 * running broker with every service. The schemas are in this one codebase and image anyway, and
 * the composition root passes them in (service-description.ts), so the document is the same
 * everywhere. There is no second copy: what the action validates with is what the document shows.
 */
import type { ActionSchema } from "moleculer";
import type { Scope } from "../../shared/security/auth";
import "../../shared/types";
import type { FvSchema } from "./fastest-to-json-schema";
import type { ServiceDescription } from "./service-description";

export interface ActionDefinition {
  name: string;
  params: FvSchema;
  /** The params of each line of a streamed NDJSON body. */
  lineParams?: FvSchema;
  scope?: Scope;
  summary?: string;
  visibility?: string;
}

export type ActionLookup = (fullName: string) => ActionDefinition | null;

/** Finds `<service>.<action>` among the given services: null when none of them defines it (yet). */
export function actionLookup(services: readonly ServiceDescription[]): ActionLookup {
  const byName = new Map(services.map((service) => [service.name, service.schema]));
  return (fullName) => {
    const dot = fullName.indexOf(".");
    const action = byName.get(fullName.slice(0, dot))?.actions?.[fullName.slice(dot + 1)];
    if (!action || typeof action !== "object") return null;
    const a = action as ActionSchema;
    return {
      name: fullName,
      params: a.params ?? {},
      lineParams: a.lineParams,
      scope: a.scope,
      summary: a.summary,
      visibility: a.visibility,
    };
  };
}
