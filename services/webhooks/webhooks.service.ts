/**
 * webhooks: discovery and subscriptions (any authenticated client, for its own subscriptions
 * only), fan-out of domain events from the channels into deliveries, and the dispatcher that
 * sends them (webhooks.dispatcher.ts). Guide for subscribers: docs/webhooks.md.
 */
import type { ChannelSchema, Context } from "moleculer";
import { callerOf, type Principal, type RequestContext } from "../../shared/security/auth";
import { ALL_CHANNELS, NEVER_GIVE_UP } from "../../shared/messaging/channels";
import type { Config } from "../../shared/config/config";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { reportWebhookHealthFrom } from "../../shared/observability/metrics";
import { outboxRelayMixin } from "../../shared/messaging/outbox-relay.mixin";
import type { PeriodicJob } from "../../shared/database/periodic-job";
import { ConflictError, ForbiddenError, InvalidInputError, NotFoundError } from "../../shared/errors";
import { BROADCASTS, type ClientsChangedPayload } from "../../shared/messaging/events";
import { MAX_PAGE_BYTES, toPage, toSizeBoundedPage } from "../../shared/http/paging";
import { withRequestId } from "../../shared/observability/request-context";
import { resumeTrace, SpanKind } from "../../shared/observability/tracing";
import { rememberingOpener, type SecretBox } from "../../shared/security/secret-box";
import { secretBoxFor, type KeyConfig } from "../../shared/security/secrets-keyring";
import type { StorageSettings } from "../../shared/service-settings";
import { Dispatcher } from "./webhooks.dispatcher";
import { onShutdown } from "../../shared/shutdown";
import { audienceOf, availableEvents, describeEvent, hears } from "./webhooks.audience";
import { asDomainEvent, fanOut } from "./webhooks.fanout";
import { ClientGrants } from "./webhooks.grants";
import {
  availableParams,
  deliveriesParams,
  idParams,
  listParams,
  recoverParams,
  recoveryParams,
  redeliverParams,
  rotateParams,
  subscribeParams,
  type DeliveriesParams,
  type IdParams,
  type ListParams,
  type RecoverParams,
  type RecoveryParams,
  type RedeliverParams,
  type RotateParams,
  type SubscribeParams,
} from "./webhooks.params";
import { attemptsOf } from "./webhooks.attempts.repository";
import {
  cancelClaims,
  cancelQueuedDeliveries,
  type ClaimedDelivery,
  findDelivery,
  listDeliveries,
  scheduleAgain,
} from "./webhooks.deliveries.repository";
import { createRecovery, findRecovery, type RecoveryRequest } from "./webhooks.recoveries.repository";
import { subscriptionStats } from "./webhooks.stats";
import {
  deleteSubscription,
  findSubscription,
  findSubscriptionByTarget,
  insertSubscription,
  listSubscriptions,
  markEnabled,
  rotateSecrets,
  type SigningKeys,
  type SubscriptionRow,
} from "./webhooks.subscriptions.repository";
import {
  presentDelivery,
  presentRecovery,
  presentSubscription,
  presentWithSecrets,
  type Delivery,
  type Recovery,
  type Subscription,
  type SubscriptionWithSecrets,
  type WebhookEvent,
} from "./webhooks.representation";
import { Recoverer, sameRecoveryRequest } from "./webhooks.recovery";
import { queueTestEvent } from "./webhooks.test-event";
import { sendWebhook } from "./webhooks.sender";
import { generateKey, generateSecret, generateSigningKeyPair, type SignatureScheme } from "./webhooks.signing";
import { checkTarget } from "./webhooks.url-policy";
import { SubscriptionHealth, healthFigures } from "./webhooks.subscription-health";
import { webhooksRetentionJob } from "./webhooks.retention";
import { presentStats, STATS_WINDOW_MS, type SubscriptionStats } from "./webhooks.stats";
import { migrations } from "./migrations";

/** Messages one webhooks process handles at once from each channel. */
const CHANNEL_MAX_IN_FLIGHT = 32;
/** A message that failed (database unreachable...) waits this long before it is offered again. */
const CHANNEL_RETRY_PAUSE_MS = 1_000;

interface Methods {
  ownSubscription(ctx: RequestContext, id: number): Promise<SubscriptionRow>;
  ingest(payload: unknown): Promise<void>;
  clientChanged(clientId: number): Promise<void>;
  entitledOnly(claimed: ClaimedDelivery[]): Promise<ClaimedDelivery[]>;
  presentDeliveryOf(subscriptionId: number, deliveryId: number): Promise<Delivery>;
}

/** An Ed25519 key pair for `ed25519`, none for `hmac`. */
const signingKeysFor = (scheme: SignatureScheme): SigningKeys =>
  scheme === "ed25519" ? generateSigningKeyPair() : null;

/** One consumer per event channel, all in the `webhooks` group: replicas share the messages. */
function channelConsumers(): Record<string, ChannelSchema<Pick<Methods, "ingest">>> {
  const consumer: ChannelSchema<Pick<Methods, "ingest">> = {
    maxInFlight: CHANNEL_MAX_IN_FLIGHT,
    maxRetries: NEVER_GIVE_UP,
    handler(payload) {
      return this.ingest(payload);
    },
  };
  return Object.fromEntries(ALL_CHANNELS.map((channel) => [channel, consumer]));
}

/** What the composition root builds this service with (runtime/settings-from-config.ts). */
export interface WebhooksSettings extends StorageSettings {
  webhooks: Config["webhooks"];
  /** DATABASE_URL and SECRETS_ENCRYPTION_KEYS: which keys seal the stored secrets (shared/security/secrets-keyring.ts). */
  secrets: KeyConfig;
}

const webhooksService: DbServiceSchema<
  Methods,
  {
    dispatcher?: Dispatcher;
    recoverer?: Recoverer;
    grants: ClientGrants;
    retention?: PeriodicJob;
    stopReportingHealth?: () => void;
    secrets: SecretBox;
  }
> = {
  name: "webhooks",
  // Its own outbox carries webhook_endpoint_disabled (webhooks.subscription-health.ts).
  mixins: [databaseMixin("webhooks", migrations), outboxRelayMixin("webhooks")],

  channels: channelConsumers(),

  events: {
    // A client changed (docs/webhooks.md, "When a client's access changes"): its queued
    // deliveries it may no longer receive are cancelled. Missing this broadcast leaks nothing:
    // the dispatcher asks for the grants afresh before sending.
    [BROADCASTS.clientsChanged.name](ctx: Context<Partial<ClientsChangedPayload> | undefined>) {
      const { clientId } = ctx.params ?? {};
      if (typeof clientId === "number") return this.clientChanged(clientId);
      this.grants.clear();
      return undefined;
    },
  },

  actions: {
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
            `This API key may not subscribe to \`${event}\`; GET /api/v1/webhooks/available lists the events it may use.`,
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
            },
            this.secrets,
          );
          if (created) {
            ctx.meta.$statusCode = 201;
            ctx.meta.$location = `/api/v1/webhooks/${created.id}`;
            return presentWithSecrets(created);
          }
          const existing = await findSubscriptionByTarget(this.db, client.clientId, event, url);
          if (existing && ctx.params.signature && presentSubscription(existing).signature !== ctx.params.signature) {
            throw new ConflictError(
              `Subscription ${existing.id} exists for this event and URL with another signature scheme: POST /api/v1/webhooks/${existing.id}/rotate with {"signature": "${ctx.params.signature}"} switches it.`,
              { id: existing.id, path: "signature" },
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
        return presentSubscription(await this.ownSubscription(ctx, ctx.params.id));
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
        const current = await this.ownSubscription(ctx, ctx.params.id);
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

    sendTest: {
      visibility: "published",
      scope: "webhooks",
      summary:
        "Send a `webhook_test` event to this subscription, the way every event goes: signed, logged, retried, listed in its deliveries.",
      params: idParams,
      async handler(ctx: RequestContext<IdParams>): Promise<Delivery> {
        const subscription = await this.ownSubscription(ctx, ctx.params.id);
        const deliveryId = await queueTestEvent(this.db, subscription);
        this.dispatcher?.wake();
        ctx.meta.$statusCode = 202;
        return this.presentDeliveryOf(subscription.id, deliveryId);
      },
    },

    recover: {
      visibility: "published",
      scope: "webhooks",
      summary:
        "Queue again, in the background, every delivery of a time window that did not succeed (or all of them); the same request while it runs answers the same recovery.",
      params: recoverParams,
      async handler(ctx: RequestContext<RecoverParams>): Promise<Recovery> {
        const subscription = await this.ownSubscription(ctx, ctx.params.id);
        const asked: RecoveryRequest = {
          since: new Date(ctx.params.since),
          until: ctx.params.until === undefined ? null : new Date(ctx.params.until),
          all: ctx.params.all ?? false,
        };
        if (asked.until && asked.until <= asked.since)
          throw InvalidInputError.field("until", "Must be later than `since`.");
        const { row, created } = await createRecovery(this.db, subscription.id, asked);
        if (!created && !sameRecoveryRequest(row, asked)) {
          throw new ConflictError(
            `Recovery ${row.id} of this subscription, with another window, is not finished: GET /api/v1/webhooks/${subscription.id}/recoveries/${row.id} follows it.`,
            { recoveryId: row.id },
          );
        }
        if (created) this.recoverer?.wake();
        ctx.meta.$statusCode = created ? 202 : 200;
        ctx.meta.$location = `/api/v1/webhooks/${subscription.id}/recoveries/${row.id}`;
        return presentRecovery(row);
      },
    },

    recovery: {
      visibility: "published",
      scope: "webhooks",
      summary: "A recovery of this subscription and how far it got.",
      params: recoveryParams,
      async handler(ctx: RequestContext<RecoveryParams>): Promise<Recovery> {
        const subscription = await this.ownSubscription(ctx, ctx.params.id);
        const row = await findRecovery(this.db, subscription.id, ctx.params.recoveryId);
        if (!row) throw new NotFoundError("recovery", ctx.params.recoveryId);
        return presentRecovery(row);
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
        return presentSubscription(row);
      },
    },

    stats: {
      visibility: "published",
      scope: "webhooks",
      summary:
        "A subscription's health: success rate and latency over the last 24 hours, backlog, last success, last failure.",
      params: idParams,
      async handler(ctx: RequestContext<IdParams>): Promise<SubscriptionStats> {
        const subscription = await this.ownSubscription(ctx, ctx.params.id);
        return presentStats(subscription, await subscriptionStats(this.db, subscription.id, STATS_WINDOW_MS));
      },
    },

    deliveries: {
      visibility: "published",
      scope: "webhooks",
      summary: "A subscription's deliveries, oldest first, each with its attempts; filter with ?status=.",
      params: deliveriesParams,
      async handler(ctx: RequestContext<DeliveriesParams>) {
        const { id, status, ...page } = ctx.params;
        const subscription = await this.ownSubscription(ctx, id);
        const { rows, nextCursor } = await listDeliveries(this.db, subscription.id, page, status);
        const attempts = await attemptsOf(
          this.db,
          rows.map((r) => r.id),
        );
        // Each delivery carries its body: a page also stops at MAX_PAGE_BYTES (docs/webhooks.md).
        const deliveries = rows.map((r) => presentDelivery(r, attempts.get(r.id) ?? []));
        return toSizeBoundedPage(deliveries, nextCursor, (d) => d.id, MAX_PAGE_BYTES);
      },
    },

    redeliver: {
      visibility: "published",
      scope: "webhooks",
      summary: "Send a delivery again, whatever its status, with a fresh retry schedule.",
      params: redeliverParams,
      async handler(ctx: RequestContext<RedeliverParams>): Promise<Delivery> {
        const subscription = await this.ownSubscription(ctx, ctx.params.id);
        if (!(await scheduleAgain(this.db, subscription.id, ctx.params.deliveryId))) {
          throw new NotFoundError("delivery", ctx.params.deliveryId);
        }
        this.dispatcher?.wake();
        ctx.meta.$statusCode = 202;
        return this.presentDeliveryOf(subscription.id, ctx.params.deliveryId);
      },
    },
  },

  methods: {
    async clientChanged(clientId: number): Promise<void> {
      this.grants.forget(clientId);
      try {
        const client = (await this.grants.fresh([clientId])).get(clientId);
        const cancelled = await cancelQueuedDeliveries(this.db, clientId, audienceOf(client));
        if (cancelled > 0)
          this.logger.info(
            `Webhooks: cancelled ${cancelled} queued deliveries client ${clientId} may no longer receive.`,
          );
      } catch (err) {
        this.logger.warn(
          `Webhooks: could not re-check client ${clientId}'s queued deliveries now; the dispatcher checks each before sending: ${(err as Error).message}`,
        );
      }
    },

    /** Just before sending: the grants asked afresh, so nothing depends on a broadcast arriving. */
    async entitledOnly(claimed: ClaimedDelivery[]): Promise<ClaimedDelivery[]> {
      const principals = await this.grants.fresh(claimed.map((d) => d.client_id));
      const allowed = (d: ClaimedDelivery) =>
        hears(principals.get(d.client_id), d.client_id, { event: d.event, ownerClientId: d.owner_client_id });
      const refused = claimed.filter((d) => !allowed(d));
      if (refused.length > 0) {
        await cancelClaims(this.db, refused);
        this.logger.info(
          `Webhooks: cancelled ${refused.length} deliveries whose client is no longer entitled to them.`,
        );
      }
      return claimed.filter(allowed);
    },

    async presentDeliveryOf(subscriptionId: number, deliveryId: number): Promise<Delivery> {
      // Gone meanwhile: the subscription was deleted with its deliveries.
      const row = await findDelivery(this.db, subscriptionId, deliveryId);
      if (!row) throw new NotFoundError("delivery", deliveryId);
      return presentDelivery(row, (await attemptsOf(this.db, [row.id])).get(row.id) ?? []);
    },

    async ownSubscription(ctx: RequestContext, id: number): Promise<SubscriptionRow> {
      // Another client's subscription is "not found", never "forbidden": its existence is not revealed.
      const row = await findSubscription(this.db, callerOf(ctx).clientId, id);
      if (!row) throw new NotFoundError("webhook subscription", id);
      return row;
    },

    /** A channel message: acknowledged (by resolving) only once its deliveries are committed. */
    async ingest(payload: unknown): Promise<void> {
      const event = asDomainEvent(payload);
      if (!event) {
        // Redelivering it would fail forever; it cannot come from our relay.
        this.logger.error("Webhooks: dropped a channel message that is not a domain event.");
        return;
      }
      // In a span under the publisher's trace; the events it records remember this span.
      await withRequestId(event.requestId, () =>
        resumeTrace(event.traceparent, `fan-out ${event.event}`, { kind: SpanKind.CONSUMER }, async () => {
          try {
            const { queued } = await fanOut(this.db, this.grants, event, this.dispatcher);
            if (queued.length > 0) this.dispatcher?.queued(queued);
          } catch (err) {
            this.logger.warn(
              `Webhooks: could not record the deliveries of ${event.id}, it will be offered again: ${(err as Error).message}`,
            );
            await new Promise((resolve) => setTimeout(resolve, CHANNEL_RETRY_PAUSE_MS));
            throw err;
          }
        }),
      );
    },
  },

  created() {
    this.grants = new ClientGrants((ids) =>
      this.broker.call<Principal[], { ids: number[] }>("clients.principals", { ids }),
    );
  },

  started() {
    const settings = this.settings as WebhooksSettings;
    const cfg = settings.webhooks;
    // Resolved at start: without its keys (postgres://) the process refuses to start.
    const secrets = secretBoxFor(settings.secrets, (line) => this.logger.warn(line));
    this.secrets = secrets;
    const openedSecrets = rememberingOpener(secrets);
    this.dispatcher = new Dispatcher({
      db: this.db,
      logger: this.logger,
      entitledOnly: (claimed) => this.entitledOnly(claimed),
      send: (webhook) =>
        sendWebhook(webhook, {
          timeoutMs: cfg.timeoutMs,
          allowInsecure: cfg.allowInsecureTargets,
          secrets: openedSecrets,
        }),
      batch: cfg.dispatchBatch,
      endpointConcurrency: cfg.endpointConcurrency,
      intervalMs: cfg.dispatchIntervalMs,
      timeoutMs: cfg.timeoutMs,
      retry: { scheduleSeconds: cfg.retryScheduleSeconds, retryAfterMaxMs: cfg.retryAfterMaxMs },
      health: new SubscriptionHealth({ db: this.db, disableAfterMs: cfg.disableAfterMs }),
    });
    this.retention = webhooksRetentionJob({
      ready: () => this.broker.started,
      db: this.db,
      logger: this.logger,
      retentionMs: cfg.retentionMs,
      everyMs: settings.outbox.retentionIntervalMs,
    });
    this.retention.start();
    const db = this.db;
    this.stopReportingHealth = reportWebhookHealthFrom(() => healthFigures(db));
    this.dispatcher.start();
    const dispatcherToWake = this.dispatcher;
    this.recoverer = new Recoverer({
      db: this.db,
      logger: this.logger,
      intervalMs: cfg.dispatchIntervalMs,
      queued: () => dispatcherToWake.wake(),
    });
    this.recoverer.start();
    // At SIGTERM, finish the attempts under way alongside the gateway's drain, not after it.
    const dispatcher = this.dispatcher;
    onShutdown(this.broker, () => dispatcher.stop());
  },

  async stopped() {
    this.stopReportingHealth?.();
    await this.retention?.stop();
    await this.recoverer?.stop();
    await this.dispatcher?.stop();
  },
};

export default webhooksService;
