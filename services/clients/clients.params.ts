import { CLIENT_KINDS, SCOPES, type ClientKind, type Scope } from "../../shared/auth";
import { EVENTS, type EventName } from "../../shared/outbox";
import { pageParams, type PageQuery } from "../../shared/paging";
import { idList, optional, pathId } from "../../shared/params";

export const createClientParams = {
  $$strict: true,
  name: { type: "string", trim: true, min: 1, max: 200 },
  kind: { type: "enum", values: [...CLIENT_KINDS] },
  scopes: optional({ type: "array", unique: true, max: SCOPES.length, items: { type: "enum", values: [...SCOPES] } }),
  webhookEvents: optional({ type: "array", unique: true, max: EVENTS.length, items: { type: "enum", values: [...EVENTS] } }),
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
