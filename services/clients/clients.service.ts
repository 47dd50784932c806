/**
 * clients: the API clients and their keys. Authenticates keys for the gateway, and lets
 * admins (and the CLI) create, list and revoke clients. A new key is shown once.
 */
import type { Principal, RequestContext } from "../../shared/security/auth";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { ConflictError, InvalidInputError, NotFoundError, UnauthenticatedError } from "../../shared/errors";
import { announceChange } from "./clients.changes";
import { toPage } from "../../shared/http/paging";
import { respondCreated } from "../../shared/http/responses";
import { DEFAULT_SCOPES, DEFAULT_WEBHOOK_EVENTS } from "./clients.defaults";
import { apiKeyHash, lookupOf } from "../../shared/security/api-key-digest";
import { generateApiKey, hintOf, sameHash } from "./clients.keys";
import {
  authenticateParams,
  clientIdParams,
  createClientParams,
  listClientsParams,
  principalsParams,
  updateClientParams,
  type AuthenticateParams,
  type ClientIdParams,
  type CreateClientParams,
  type ListClientsParams,
  type PrincipalsParams,
  type UpdateClientParams,
} from "./clients.params";
import * as repo from "./clients.repository";
import { toPrincipal } from "./clients.principal";
import {
  LINK_PREFIX,
  linkPrincipal,
  portalSessionActions,
  SESSION_PREFIX,
  sessionPrincipal,
  type PortalSessionSettings,
} from "./clients.portal-sessions";
import { listLiveSessionLookups, revokeAllOf } from "./clients.portal-sessions.repository";
import { migrations } from "./migrations";
import type { StorageSettings } from "../../shared/service-settings";

/** What the composition root builds this service with (runtime/settings-from-config.ts). */
export interface ClientsSettings extends StorageSettings {
  /** ADMIN_API_KEY: when set, the admin client holding it is created or updated at start. */
  adminApiKey: string | null;
  /** The subscriber portal's sign-in links and sessions. */
  portal: PortalSessionSettings;
}

const ADMIN_CLIENT_NAME = "admin (ADMIN_API_KEY)";

function present(row: repo.ClientRow) {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    scopes: row.scopes,
    webhookEvents: row.webhook_events,
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
  };
}

function keyRecord(key: string) {
  const hash = apiKeyHash(key);
  return { lookup: lookupOf(hash), hash, hint: hintOf(key) };
}

const clientsService: DbServiceSchema<{ ensureAdminClient(key: string): Promise<void> }> = {
  name: "clients",
  mixins: [databaseMixin("clients", migrations)],

  actions: {
    ...portalSessionActions,

    authenticate: {
      visibility: "public",
      params: authenticateParams,
      async handler(ctx: RequestContext<AuthenticateParams>): Promise<Principal> {
        const { key } = ctx.params;
        const portal = key.startsWith(SESSION_PREFIX)
          ? await sessionPrincipal(this.db, key)
          : key.startsWith(LINK_PREFIX)
            ? await linkPrincipal(this.db, key)
            : undefined;
        if (portal) return portal;
        const hash = apiKeyHash(ctx.params.key);
        const candidates = await repo.findKeyCandidates(this.db, lookupOf(hash));
        const match = candidates.find((c) => sameHash(c.hash, hash));
        if (!match) throw new UnauthenticatedError("This API key is unknown or revoked.");
        return toPrincipal(match);
      },
    },

    /**
     * The lookup digests of every active key: how the gateway tells a key that may exist from
     * one that cannot, without a lookup per key (gateway/active-keys.ts).
     */
    activeKeyLookups: {
      visibility: "public",
      params: {},
      async handler(): Promise<string[]> {
        const [keys, sessions] = await Promise.all([
          repo.listActiveKeyLookups(this.db),
          listLiveSessionLookups(this.db),
        ]);
        return [...keys, ...sessions];
      },
    },

    principals: {
      visibility: "public",
      params: principalsParams,
      async handler(ctx: RequestContext<PrincipalsParams>): Promise<Principal[]> {
        const rows = await repo.findClients(this.db, ctx.params.ids);
        return rows.filter((r) => !r.revoked_at).map(toPrincipal);
      },
    },

    create: {
      visibility: "published",
      scope: "admin",
      summary: "Create an API client; its key is in the response and never shown again.",
      params: createClientParams,
      async handler(ctx: RequestContext<CreateClientParams>) {
        const { name, kind } = ctx.params;
        const apiKey = generateApiKey();
        const row = await this.db.transaction(async (trx) => {
          const client = await repo.insertClient(trx, {
            name,
            kind,
            scopes: ctx.params.scopes ?? DEFAULT_SCOPES[kind],
            webhookEvents: ctx.params.webhookEvents ?? DEFAULT_WEBHOOK_EVENTS[kind],
          });
          await repo.insertApiKey(trx, client.id, keyRecord(apiKey));
          return client;
        });
        // A new key: gateways reload their list of active keys (gateway/active-keys.ts) at once.
        await announceChange(ctx, row.id, this.logger);
        respondCreated(ctx, "clients", row.id);
        return { ...present(row), apiKey };
      },
    },

    rotateKey: {
      visibility: "published",
      scope: "admin",
      summary: "Revoke every key of a client and issue a new one (shown once).",
      params: clientIdParams,
      async handler(ctx: RequestContext<ClientIdParams>) {
        const apiKey = generateApiKey();
        const row = await this.db.transaction(async (trx) => {
          const client = await repo.findClient(trx, ctx.params.id);
          if (!client || client.revoked_at) throw new NotFoundError("client", ctx.params.id);
          await repo.revokeKeysOf(trx, client.id);
          await repo.insertApiKey(trx, client.id, keyRecord(apiKey));
          return client;
        });
        await announceChange(ctx, row.id, this.logger);
        return { ...present(row), apiKey };
      },
    },

    list: {
      visibility: "published",
      scope: "admin",
      summary: "List API clients.",
      params: listClientsParams,
      async handler(ctx: RequestContext<ListClientsParams>) {
        const { rows, nextCursor } = await repo.listClients(this.db, ctx.params);
        return toPage(
          rows.map((r) => present(r as unknown as repo.ClientRow)),
          nextCursor,
        );
      },
    },

    get: {
      visibility: "published",
      scope: "admin",
      summary: "One API client.",
      params: clientIdParams,
      async handler(ctx: RequestContext<ClientIdParams>) {
        const row = await repo.findClient(this.db, ctx.params.id);
        if (!row) throw new NotFoundError("client", ctx.params.id);
        return present(row);
      },
    },

    update: {
      visibility: "published",
      scope: "admin",
      summary:
        "Change a client's name, scopes or webhook events; every gateway and the webhooks service apply it within 2 s.",
      params: updateClientParams,
      async handler(ctx: RequestContext<UpdateClientParams>) {
        const { id, name, scopes, webhookEvents } = ctx.params;
        const changes = { name, scopes, webhookEvents };
        if (Object.values(changes).every((v) => v === undefined)) {
          const fields = Object.keys(changes);
          throw InvalidInputError.fields(fields, `Give at least one of ${fields.map((f) => `\`${f}\``).join(", ")}.`);
        }
        const row = await repo.updateClient(this.db, id, changes);
        if (!row) {
          if (await repo.findClient(this.db, id))
            throw new ConflictError(`Client ${id} is revoked; it cannot be changed.`, { id });
          throw new NotFoundError("client", id);
        }
        await announceChange(ctx, row.id, this.logger);
        return present(row);
      },
    },

    revoke: {
      visibility: "published",
      scope: "admin",
      summary: "Revoke a client and all its keys, at once on every gateway.",
      params: clientIdParams,
      async handler(ctx: RequestContext<ClientIdParams>) {
        const row = await this.db.transaction(async (trx) => {
          const revoked = await repo.revokeClient(trx, ctx.params.id);
          // Its portal links and sessions with it (they would be refused anyway: listed as revoked).
          if (revoked) await revokeAllOf(trx, revoked.id);
          return revoked;
        });
        if (!row) throw new NotFoundError("client", ctx.params.id);
        await announceChange(ctx, row.id, this.logger);
        return present(row);
      },
    },
  },

  methods: {
    /** Makes ADMIN_API_KEY valid for an admin client; safe to run on every replica at once. */
    async ensureAdminClient(key: string) {
      await this.db.transaction(async (trx) => {
        await repo.lockBootstrap(trx);
        const existing = await repo.findClientByName(trx, ADMIN_CLIENT_NAME, "admin");
        const client =
          existing ??
          (await repo.insertClient(trx, {
            name: ADMIN_CLIENT_NAME,
            kind: "admin",
            scopes: DEFAULT_SCOPES.admin,
            webhookEvents: DEFAULT_WEBHOOK_EVENTS.admin,
          }));
        await repo.insertApiKey(trx, client.id, keyRecord(key));
      });
    },
  },

  async started() {
    const key = (this.settings as ClientsSettings).adminApiKey;
    if (key) await this.ensureAdminClient(key);
  },
};

export default clientsService;
