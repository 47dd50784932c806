/**
 * The actions on a client's own subscriptions (docs/webhooks.md, "Subscribing"): which events it
 * may subscribe to, subscribe, list, read, delete, rotate the key and secret, enable again, and
 * the delivery figures of one.
 */
import { ConflictError, ForbiddenError, InvalidInputError, NotFoundError } from "../../shared/errors";
import { toPage } from "../../shared/http/paging";
import { API_PREFIX, resourcePath, respondCreated } from "../../shared/http/responses";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { availableEvents, describeEvent } from "./webhooks.audience";
import {
  availableParams,
  idParams,
  statsParams,
  type StatsParams,
  listParams,
  rotateParams,
  subscribeParams,
  type IdParams,
  type ListParams,
  type RotateParams,
  type SubscribeParams,
} from "./webhooks.params";
import {
  presentSubscription,
  presentWithSecrets,
  type Subscription,
  type SubscriptionWithSecrets,
  type WebhookEvent,
} from "./webhooks.representation";
import { subscriptionsChanged } from "./webhooks.listeners";
import { ownSubscription, type WebhooksActions, type WebhooksSettings } from "./webhooks.service-context";
import { generateKey, generateSecret, generateSigningKeyPair, type SignatureScheme } from "./webhooks.signing";
import {
  DEFAULT_BUCKET,
  presentStats,
  statsSeries,
  subscriptionStats,
  WINDOW_MS,
  type SubscriptionStats,
} from "./webhooks.stats";
import {
  deleteSubscription,
  findSubscriptionByTarget,
  insertSubscription,
  listSubscriptions,
  markEnabled,
  rotateSecrets,
  type SigningKeys,
} from "./webhooks.subscriptions.repository";
import { checkTarget } from "./webhooks.url-policy";

/** Where a subscription is, under the API's prefix (`/api/v1/webhooks/{id}`). */
const COLLECTION = "webhooks";

/** An Ed25519 key pair for `ed25519`, none for `hmac`. */
const signingKeysFor = (scheme: SignatureScheme): SigningKeys =>
  scheme === "ed25519" ? generateSigningKeyPair() : null;

export const subscriptionActions: WebhooksActions = {
  available: {
    visibility: "published",
    scope: "webhooks",
    summary: "The webhook events this client may subscribe to.",
    params: availableParams,
    handler(ctx: RequestContext): WebhookEvent[] {
      return availableEvents(callerOf(ctx)).map(describeEvent);
    },
  },

  subscribe: {
    visibility: "published",
    scope: "webhooks",
    summary: "Subscribe a URL to an event (201 new, 200 when it existed); key and secret are shown only on creation.",
    params: subscribeParams,
    async handler(ctx: RequestContext<SubscribeParams>): Promise<Subscription | SubscriptionWithSecrets> {
      const client = callerOf(ctx);
      const { event } = ctx.params;
      if (!client.webhookEvents.includes(event)) {
        throw new ForbiddenError(
          `This API key may not subscribe to \`${event}\`; GET ${API_PREFIX}/webhooks/available lists the events it may use.`,
          { event },
        );
      }
      const target = await checkTarget(ctx.params.url, {
        allowInsecure: (this.settings as WebhooksSettings).webhooks.allowInsecureTargets,
      });
      if (!target.ok) throw InvalidInputError.field("url", target.reason);
      const url = target.url.href;

      // Insert, or find the one that exists; a concurrent DELETE between the two means: insert again.
      for (;;) {
        const created = await insertSubscription(
          this.db,
          {
            clientId: client.clientId,
            event,
            url,
            key: generateKey(),
            secret: generateSecret(),
            signing: signingKeysFor(ctx.params.signature ?? "hmac"),
            ordering: ctx.params.ordering ?? "none",
          },
          this.secrets,
        );
        if (created) {
          // Its first events may follow the answer at once: every replica hears of it first.
          await subscriptionsChanged(this);
          respondCreated(ctx, COLLECTION, created.id);
          return presentWithSecrets(created);
        }
        const existing = await findSubscriptionByTarget(this.db, client.clientId, event, url);
        if (existing && ctx.params.signature && presentSubscription(existing).signature !== ctx.params.signature) {
          throw new ConflictError(
            `Subscription ${existing.id} exists for this event and URL with another signature scheme: POST ${resourcePath(COLLECTION, existing.id)}/rotate with {"signature": "${ctx.params.signature}"} switches it.`,
            { id: existing.id, path: "signature" },
          );
        }
        if (existing && ctx.params.ordering && existing.ordering !== ctx.params.ordering) {
          throw new ConflictError(
            `Subscription ${existing.id} exists for this event and URL with \`ordering\` ${existing.ordering}: PATCH ${resourcePath(COLLECTION, existing.id)} with {"ordering": "${ctx.params.ordering}"} changes it.`,
            { id: existing.id, path: "ordering" },
          );
        }
        if (existing) return presentSubscription(existing);
      }
    },
  },

  list: {
    visibility: "published",
    scope: "webhooks",
    summary: "This client's webhook subscriptions.",
    params: listParams,
    async handler(ctx: RequestContext<ListParams>) {
      const { rows, nextCursor } = await listSubscriptions(this.db, callerOf(ctx).clientId, ctx.params);
      return toPage(rows.map(presentSubscription), nextCursor);
    },
  },

  get: {
    visibility: "published",
    scope: "webhooks",
    summary: "One of this client's webhook subscriptions.",
    params: idParams,
    async handler(ctx: RequestContext<IdParams>): Promise<Subscription> {
      return presentSubscription(await ownSubscription(this.db, ctx, ctx.params.id));
    },
  },

  unsubscribe: {
    visibility: "published",
    scope: "webhooks",
    summary: "Delete a subscription with its deliveries; nothing more is sent to it.",
    params: idParams,
    async handler(ctx: RequestContext<IdParams>): Promise<null> {
      if (!(await deleteSubscription(this.db, callerOf(ctx).clientId, ctx.params.id))) {
        throw new NotFoundError("webhook subscription", ctx.params.id);
      }
      await subscriptionsChanged(this);
      ctx.meta.$statusCode = 204;
      return null;
    },
  },

  rotate: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Replace a subscription's key and secret (shown once), and its Ed25519 key pair if it has one; the replaced ones keep signing beside them for the overlap (24 h by default).",
    params: rotateParams,
    async handler(ctx: RequestContext<RotateParams>): Promise<SubscriptionWithSecrets> {
      const current = await ownSubscription(this.db, ctx, ctx.params.id);
      const scheme = ctx.params.signature ?? presentSubscription(current).signature;
      const row = await rotateSecrets(
        this.db,
        callerOf(ctx).clientId,
        ctx.params.id,
        {
          key: generateKey(),
          secret: generateSecret(),
          signing: signingKeysFor(scheme),
          overlapMs: (this.settings as WebhooksSettings).webhooks.secretOverlapMs,
        },
        this.secrets,
      );
      if (!row) throw new NotFoundError("webhook subscription", ctx.params.id);
      return presentWithSecrets(row);
    },
  },

  enable: {
    visibility: "published",
    scope: "webhooks",
    summary: "Enable a disabled subscription again (its failures forgotten); an active one stays as it is.",
    params: idParams,
    async handler(ctx: RequestContext<IdParams>): Promise<Subscription> {
      const row = await markEnabled(this.db, callerOf(ctx).clientId, ctx.params.id);
      if (!row) throw new NotFoundError("webhook subscription", ctx.params.id);
      await subscriptionsChanged(this);
      return presentSubscription(row);
    },
  },

  stats: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "A subscription's health: attempts, success rate and latency over the last 24 hours or 7 days and hour by hour or day by day in them, backlog, last success, last failure.",
    params: statsParams,
    async handler(ctx: RequestContext<StatsParams>): Promise<SubscriptionStats> {
      const subscription = await ownSubscription(this.db, ctx, ctx.params.id);
      const window = ctx.params.window ?? "24h";
      const windowMs = WINDOW_MS[window];
      const [figures, series] = await Promise.all([
        subscriptionStats(this.db, subscription.id, windowMs),
        statsSeries(this.db, subscription.id, windowMs, ctx.params.bucket ?? DEFAULT_BUCKET[window]),
      ]);
      return presentStats(subscription, figures, windowMs, series);
    },
  },
};
