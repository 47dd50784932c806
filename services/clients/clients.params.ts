import { CLIENT_KINDS, SCOPES, type ClientKind, type Scope } from "../../shared/auth";
import { EVENTS, type EventName } from "../../shared/events";
import { pageParams, type PageQuery } from "../../shared/paging";
import { idList, optional, pathId } from "../../shared/params";

const scopesField = { type: "array", unique: true, max: SCOPES.length, items: { type: "enum", values: [...SCOPES] } } as const;
const webhookEventsField = { type: "array", unique: true, max: EVENTS.length, items: { type: "enum", values: [...EVENTS] } } as const;

export const createClientParams = {
  $$strict: true,
  name: { type: "string", trim: true, min: 1, max: 200 },
  kind: { type: "enum", values: [...CLIENT_KINDS] },
  scopes: optional(scopesField),
  webhookEvents: optional(webhookEventsField),
} as const;
export interface CreateClientParams {
  name: string;
  kind: ClientKind;
  scopes?: Scope[];
  webhookEvents?: EventName[];
}

export const clientIdParams = {
  $$strict: true,
  id: pathId("client"),
} as const;
export interface ClientIdParams {
  id: number;
}

/** Every field optional, but at least one must be given (checked in the handler, naming the body). */
export const updateClientParams = {
  $$strict: true,
  id: clientIdParams.id,
  name: optional(createClientParams.name),
  scopes: optional(scopesField),
  webhookEvents: optional(webhookEventsField),
} as const;
export interface UpdateClientParams {
  id: number;
  name?: string;
  scopes?: Scope[];
  webhookEvents?: EventName[];
}

export const listClientsParams = { $$strict: true, ...pageParams } as const;
export type ListClientsParams = PageQuery;

export const authenticateParams = { key: { type: "string", min: 1, max: 512 } } as const;
export interface AuthenticateParams {
  key: string;
}

export const principalsParams = { ids: idList(1000) } as const;
export interface PrincipalsParams {
  ids: number[];
}
