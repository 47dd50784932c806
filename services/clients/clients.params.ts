import { CLIENT_KINDS, GRANTABLE_SCOPES } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";
import { pageParams } from "../../shared/http/paging";
import { idList, optional, pathId } from "../../shared/http/params";
import type { ParamsOf } from "../../shared/schema-types";

const scopesField = {
  type: "array",
  unique: true,
  max: GRANTABLE_SCOPES.length,
  items: { type: "enum", values: [...GRANTABLE_SCOPES] },
} as const;
const webhookEventsField = {
  type: "array",
  unique: true,
  max: EVENTS.length,
  items: { type: "enum", values: [...EVENTS] },
} as const;

export const createClientParams = {
  $$strict: true,
  name: { type: "string", trim: true, min: 1, max: 200 },
  kind: { type: "enum", values: [...CLIENT_KINDS] },
  scopes: optional(scopesField),
  webhookEvents: optional(webhookEventsField),
} as const;
export type CreateClientParams = ParamsOf<typeof createClientParams>;

export const clientIdParams = {
  $$strict: true,
  id: pathId("client"),
} as const;
export type ClientIdParams = ParamsOf<typeof clientIdParams>;

/** Every field optional, but at least one must be given (checked in the handler, naming each field). */
export const updateClientParams = {
  $$strict: true,
  // Written here so that the document says it (gateway/openapi/fastest-to-json-schema.ts).
  $$jsonSchemaAlso: { minProperties: 1 },
  id: clientIdParams.id,
  name: optional(createClientParams.name),
  scopes: optional(scopesField),
  webhookEvents: optional(webhookEventsField),
} as const;
export type UpdateClientParams = ParamsOf<typeof updateClientParams>;

export const listClientsParams = { $$strict: true, ...pageParams } as const;
export type ListClientsParams = ParamsOf<typeof listClientsParams>;

export const authenticateParams = { key: { type: "string", min: 1, max: 512 } } as const;
export type AuthenticateParams = ParamsOf<typeof authenticateParams>;

export const principalsParams = { ids: idList(1000) } as const;
export type PrincipalsParams = ParamsOf<typeof principalsParams>;

export const portalSessionIdParams = {
  $$strict: true,
  id: pathId("portal session"),
} as const;
export type PortalSessionIdParams = ParamsOf<typeof portalSessionIdParams>;
