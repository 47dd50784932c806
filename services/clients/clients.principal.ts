/** A client row as the gateway sees the caller (shared/security/auth.ts `Principal`). */
import type { ClientKind, Principal, Scope } from "../../shared/security/auth";
import type { ClientRow } from "./clients.repository";

export function toPrincipal(row: ClientRow): Principal {
  return {
    clientId: row.id,
    name: row.name,
    kind: row.kind as ClientKind,
    scopes: row.scopes as Scope[],
    webhookEvents: row.webhook_events,
  };
}
