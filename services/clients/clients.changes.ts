/**
 * Every change of a client (a new client, a patch, a revocation, a key rotation, a portal session
 * made or revoked), announced once it is committed as the `clientsChanged` broadcast
 * (shared/messaging/events.ts). Fire-and-forget, so listeners also keep their caches short
 * (docs/api.md, "Revocation").
 */
import type { LoggerInstance } from "moleculer";
import { announce } from "../../shared/messaging/announce";
import { BROADCASTS, type ClientsChangedPayload } from "../../shared/messaging/events";
import type { RequestContext } from "../../shared/security/auth";

export function announceChange(ctx: RequestContext, clientId: number, logger: LoggerInstance): Promise<void> {
  const payload: ClientsChangedPayload = { clientId };
  return announce(ctx, BROADCASTS.clientsChanged.name, payload, logger);
}
