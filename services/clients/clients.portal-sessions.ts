/**
 * Sign-in links and sessions of the subscriber portal (docs/webhooks.md, "The portal").
 *
 * A client's own application mints a link (`POST /portal_sessions`) for one of its users: the
 * page's URL with a one-time token in the fragment, which browsers never send to a server. The
 * page exchanges it (`POST /portal_sessions/exchange`, the token as its Bearer credential) for a
 * session token kept in the page's memory. A session reaches the client's webhooks and nothing
 * else (`requireReach` in shared/security/auth.ts); it ends at its expiry, when it is revoked,
 * or with the client. Only the SHA-256 of either token is stored, like API keys.
 */
import type { Knex } from "knex";
import type { ActionSchema, Service } from "moleculer";
import type { Db } from "../../shared/database/db";
import { ForbiddenError, NotFoundError, UnauthenticatedError } from "../../shared/errors";
import { announceChange } from "./clients.changes";
import { apiKeyHash, lookupOf } from "../../shared/security/api-key-digest";
import { callerOf, type Principal, type RequestContext } from "../../shared/security/auth";
import { generateToken, sameHash } from "./clients.keys";
import { portalSessionIdParams, type PortalSessionIdParams } from "./clients.params";
import { toPrincipal } from "./clients.principal";
import * as repo from "./clients.portal-sessions.repository";

export const LINK_PREFIX = "oipl_";
export const SESSION_PREFIX = "oips_";
/** Where the page lives: gateway/portal-paths.ts says the same (services do not import the gateway). */
const PORTAL_PAGE = "/portal";
const LIST_LIMIT = 100;

/** What the composition root gives (PORTAL_LINK_TTL, PORTAL_SESSION_TTL, PUBLIC_BASE_URL). */
export interface PortalSessionSettings {
  linkTtlMs: number;
  sessionTtlMs: number;
  publicBaseUrl: string;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

function present(row: repo.PortalSessionRow) {
  return {
    id: row.id,
    state: row.revoked_at ? "revoked" : row.exchanged_at ? "session" : "link",
    createdAt: row.created_at.toISOString(),
    linkExpiresAt: row.link_expires_at.toISOString(),
    signedInAt: iso(row.exchanged_at),
    expiresAt: iso(row.expires_at),
    revokedAt: iso(row.revoked_at),
  };
}

/** The principal of a live session token; undefined when the token is none. */
export async function sessionPrincipal(db: Db, token: string): Promise<Principal | undefined> {
  const hash = apiKeyHash(token);
  const match = (await repo.findSessionCandidates(db, lookupOf(hash))).find((c) => sameHash(c.hash, hash));
  if (!match) return undefined;
  const client = toPrincipal(match);
  // Only the webhooks, whatever else the client may do with its keys.
  return {
    ...client,
    scopes: client.scopes.filter((s) => s === "webhooks"),
    portal: { kind: "session", id: match.session_id },
  };
}

/**
 * The principal of an unused link: it may only be exchanged (requireReach); the exchange itself
 * uses the link, once, in one statement.
 */
export async function linkPrincipal(db: Db, token: string): Promise<Principal | undefined> {
  const row = await repo.findUsableLink(db, apiKeyHash(token));
  if (!row) return undefined;
  return {
    ...toPrincipal(row.client),
    scopes: ["portal:link"],
    webhookEvents: [],
    portal: { kind: "link", id: row.id },
  };
}

type ClientsThis = Service & { db: Knex };

const settingsOf = (service: ClientsThis) => (service.settings as { portal: PortalSessionSettings }).portal;

export const portalSessionActions: Record<string, ActionSchema<ClientsThis>> = {
  createPortalSession: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Mint a sign-in link to the subscriber portal for this client: the page's URL with a one-time token in its fragment, usable once until `expiresAt`.",
    params: { $$strict: true },
    async handler(ctx: RequestContext) {
      const caller = callerOf(ctx);
      // A session minting sessions would never end.
      if (caller.portal) throw new ForbiddenError("A portal session cannot mint sign-in links; use an API key.");
      const token = generateToken(LINK_PREFIX);
      const { linkTtlMs, publicBaseUrl } = settingsOf(this);
      const row = await repo.insertLink(this.db, caller.clientId, apiKeyHash(token), linkTtlMs);
      ctx.meta.$statusCode = 201;
      return {
        id: row.id,
        url: `${publicBaseUrl}${PORTAL_PAGE}#link=${token}`,
        expiresAt: row.link_expires_at.toISOString(),
      };
    },
  },

  exchangePortalLink: {
    visibility: "published",
    scope: "portal:link",
    summary:
      "Exchange a sign-in link's one-time token (sent as the Bearer credential) for a session token that reaches this client's webhooks only.",
    params: { $$strict: true },
    async handler(ctx: RequestContext) {
      const caller = callerOf(ctx);
      if (caller.portal?.kind !== "link")
        throw new ForbiddenError("Only a sign-in link's token can be exchanged for a portal session.");
      const token = generateToken(SESSION_PREFIX);
      const hash = apiKeyHash(token);
      const row = await repo.exchangeLink(this.db, caller.portal.id, {
        lookup: lookupOf(hash),
        hash,
        ttlMs: settingsOf(this).sessionTtlMs,
      });
      if (!row) throw new UnauthenticatedError("This sign-in link was used, has expired or was revoked.");
      // Gateways forget the link's principal, and list the new session as a token that may exist.
      await announceChange(ctx, row.client_id, this.logger);
      return {
        id: row.id,
        token,
        expiresAt: row.expires_at!.toISOString(),
        client: { id: row.client.id, name: row.client.name },
      };
    },
  },

  listPortalSessions: {
    visibility: "published",
    scope: "webhooks",
    summary: "This client's portal links and sessions that can still be used, newest first (at most 100).",
    params: { $$strict: true },
    async handler(ctx: RequestContext) {
      const rows = await repo.listOpen(this.db, callerOf(ctx).clientId, LIST_LIMIT);
      return rows.map(present);
    },
  },

  revokePortalSession: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Revoke a portal link or session at once on every gateway; a session may revoke itself (signing out) and nothing else.",
    params: portalSessionIdParams,
    async handler(ctx: RequestContext<PortalSessionIdParams>) {
      const caller = callerOf(ctx);
      const { id } = ctx.params;
      if (caller.portal && caller.portal.id !== id) throw new NotFoundError("portal session", id);
      const row = await repo.revoke(this.db, caller.clientId, id);
      if (!row) throw new NotFoundError("portal session", id);
      await announceChange(ctx, caller.clientId, this.logger);
      return present(row);
    },
  },
};
