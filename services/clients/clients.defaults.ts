import { GRANTABLE_SCOPES, type ClientKind, type Scope } from "../../shared/security/auth";
import { EVENTS, type EventName } from "../../shared/messaging/events";

/** Scopes a client of each kind gets when none are given. */
export const DEFAULT_SCOPES: Record<ClientKind, Scope[]> = {
  backoffice: ["crm", "catalogue", "orders:write", "orders:read", "orders:manage", "webhooks"],
  partner: ["partner", "orders:write", "orders:read", "webhooks"],
  admin: GRANTABLE_SCOPES.filter((s) => s !== "partner"),
};

export const DEFAULT_WEBHOOK_EVENTS: Record<ClientKind, EventName[]> = {
  backoffice: [...EVENTS],
  partner: [...EVENTS],
  admin: [...EVENTS],
};
