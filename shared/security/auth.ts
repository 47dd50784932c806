/**
 * Who is calling, and what they may do. The gateway authenticates the API key and puts the
 * `Principal` in `ctx.meta.client`; it travels with every nested action call.
 * An action declares the scope it needs once, as `scope` in its schema: the gateway checks it
 * before calling (so a client without the scope gets 403 before any validation) and the
 * `scopeGuard` middleware checks it again where the action runs.
 */
import type { Context, Middleware } from "moleculer";
import { ForbiddenError, UnauthenticatedError } from "../errors";
import type { Preconditions } from "../http/conditional";

export const SCOPES = [
  "crm",
  "catalogue",
  "partner",
  "orders:write",
  "orders:read",
  "orders:manage",
  "webhooks",
  "admin",
  // Held by a portal sign-in link's token alone (services/clients/clients.portal-sessions.ts): it can only be exchanged.
  "portal:link",
] as const;
export type Scope = (typeof SCOPES)[number];
/** The scopes a client can be given; `portal:link` belongs to sign-in links only. */
export const GRANTABLE_SCOPES = SCOPES.filter((s) => s !== "portal:link");

export const CLIENT_KINDS = ["backoffice", "partner", "admin"] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

export interface Principal {
  clientId: number;
  name: string;
  kind: ClientKind;
  scopes: Scope[];
  /** Webhook events this client may subscribe to. */
  webhookEvents: string[];
  /**
   * Set when the caller is not one of the client's API keys but the subscriber portal on its
   * behalf: a sign-in link (which can only be exchanged) or the session it became (which reaches
   * only the client's webhooks). See `requireReach`.
   */
  portal?: { kind: "link" | "session"; id: number };
}

/** What travels in ctx.meta of every call made on behalf of an HTTP request. */
export interface RequestMeta {
  client?: Principal;
  requestId?: string;
  idempotencyKey?: string;
  /**
   * If-Match and If-None-Match, parsed by the gateway. They travel into nested calls too, so only
   * the action the route names reads them (shared/http/conditional.ts).
   */
  preconditions?: Preconditions;
  $statusCode?: number;
  $location?: string;
  $responseHeaders?: Record<string, string>;
}

export type RequestContext<P = unknown> = Context<P, RequestMeta>;

export function hasScope(client: Principal, scope: Scope): boolean {
  return client.scopes.includes(scope);
}

/** The calling client; throws 401 when the call carries none. */
export function callerOf(ctx: Context<unknown, RequestMeta>): Principal {
  const client = ctx.meta.client;
  if (!client) throw new UnauthenticatedError();
  return client;
}

export function requireScope(client: Principal, scope: Scope): void {
  if (!hasScope(client, scope)) throw ForbiddenError.missingScope(scope);
}

/**
 * What a portal link or session may call, whatever scopes it carries: a link only its exchange,
 * a session only the webhook actions and the revocation of itself (signing out). Checked by the
 * gateway beside the scope, so that an action added later without thought is out of reach.
 */
const PORTAL_REACH: Record<NonNullable<Principal["portal"]>["kind"], (action: string) => boolean> = {
  link: (action) => action === "clients.exchangePortalLink",
  session: (action) => action.startsWith("webhooks.") || action === "clients.revokePortalSession",
};

export function requireReach(client: Principal, action: string): void {
  if (client.portal && !PORTAL_REACH[client.portal.kind](action))
    throw new ForbiddenError(`A portal ${client.portal.kind} cannot call this route; use an API key.`, {
      portal: client.portal.kind,
    });
}

/** Enforces the `scope` an action declares, where the action runs. */
export const scopeGuard: Middleware = {
  name: "ScopeGuard",
  localAction(next, action) {
    const scope = (action as { scope?: Scope }).scope;
    if (!scope) return next;
    const call = next as unknown as (ctx: Context<unknown, RequestMeta>) => Promise<unknown>;
    return function scopeChecked(ctx: Context<unknown, RequestMeta>) {
      try {
        requireScope(callerOf(ctx), scope);
      } catch (err) {
        return Promise.reject(err);
      }
      return call(ctx);
    } as typeof next;
  },
};
