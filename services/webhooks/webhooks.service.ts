/**
 * webhooks: discovery and subscriptions (any authenticated client, for its own subscriptions
 * only), fan-out of domain events from the channels into deliveries, and the background worker
 * that sends them (webhooks.worker.ts). Guide for subscribers: docs/webhooks.md.
 *
 * The schema only: its actions live by concept in webhooks.subscription-actions.ts,
 * webhooks.subscription-edit-actions.ts, webhooks.event-type-actions.ts,
 * webhooks.delivery-actions.ts, webhooks.recovery-actions.ts and webhooks.feed-actions.ts.
 */
import type { ChannelSchema, Context } from "moleculer";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { GroupCommit } from "../../shared/database/group-commit";
import { ALL_CHANNELS, NEVER_GIVE_UP } from "../../shared/messaging/channels";
import { BROADCASTS, type ClientsChangedPayload } from "../../shared/messaging/events";
import { outboxFeedMixin } from "../../shared/messaging/outbox-feed";
import { outboxRelayMixin } from "../../shared/messaging/outbox-relay.mixin";
import { withRequestId } from "../../shared/observability/request-context";
import { resumeTrace, SpanKind } from "../../shared/observability/tracing";
import type { Principal } from "../../shared/security/auth";
import { onShutdown } from "../../shared/shutdown";
import { deliveryActions } from "./webhooks.delivery-actions";
import { recheckClient } from "./webhooks.entitlement";
import { eventTypeActions } from "./webhooks.event-type-actions";
import { feedActions } from "./webhooks.feed-actions";
import { leaseMsFor } from "./webhooks.dispatcher";
import { asDomainEvent, fanOut } from "./webhooks.fanout";
import { ClientGrants } from "./webhooks.grants";
import { SubscriptionListeners } from "./webhooks.listeners";
import type { LineWaits } from "./webhooks.ordering";
import { recoveryActions } from "./webhooks.recovery-actions";
import type { WebhooksSettings, WebhooksState } from "./webhooks.service-context";
import { subscriptionActions } from "./webhooks.subscription-actions";
import { subscriptionEditActions } from "./webhooks.subscription-edit-actions";
import { WebhooksWorker } from "./webhooks.worker";
import { migrations } from "./migrations";

export type { WebhooksSettings } from "./webhooks.service-context";

/** Messages one webhooks process handles at once from each channel. */
const CHANNEL_MAX_IN_FLIGHT = 32;
/** A message that failed (database unreachable...) waits this long before it is offered again. */
const CHANNEL_RETRY_PAUSE_MS = 1_000;

interface Methods {
  ingest(payload: unknown): Promise<void>;
}

/**
 * How long a `per_entity` delivery waits (webhooks.ordering.ts): the hold, and at most a
 * dispatcher's lease behind an unsettled earlier one, which settles within it.
 */
function lineWaitsOf(cfg: Pick<WebhooksSettings["webhooks"], "orderingHoldMs" | "timeoutMs">): LineWaits {
  return { holdMs: cfg.orderingHoldMs, behindMs: leaseMsFor(cfg.timeoutMs) };
}

/** One consumer per event channel, all in the `webhooks` group: replicas share the messages. */
function channelConsumers(): Record<string, ChannelSchema<Methods>> {
  const consumer: ChannelSchema<Methods> = {
    maxInFlight: CHANNEL_MAX_IN_FLIGHT,
    maxRetries: NEVER_GIVE_UP,
    handler(payload) {
      return this.ingest(payload);
    },
  };
  return Object.fromEntries(ALL_CHANNELS.map((channel) => [channel, consumer]));
}

const webhooksService: DbServiceSchema<Methods, WebhooksState> = {
  name: "webhooks",
  // Its own outbox carries the operational events: webhook_endpoint_disabled (webhooks.subscription-health.ts),
  // webhook_delivery_exhausted and webhook_endpoint_recovered (webhooks.operational-events.ts).
  mixins: [databaseMixin("webhooks", migrations), outboxRelayMixin("webhooks"), outboxFeedMixin("webhooks")],

  channels: channelConsumers(),

  events: {
    // A client changed (docs/webhooks.md, "When a client's access changes"): its queued
    // deliveries it may no longer receive are cancelled. Missing this broadcast leaks nothing:
    // the dispatcher asks for the grants afresh before sending.
    [BROADCASTS.clientsChanged.name](ctx: Context<Partial<ClientsChangedPayload> | undefined>) {
      const { clientId } = ctx.params ?? {};
      if (typeof clientId === "number") return recheckClient(this.db, this.grants, this.logger, clientId);
      this.grants.clear();
      return undefined;
    },
    // A subscription changed in another process (or this one, which forgot already): fan-out
    // reads who listens again (webhooks.listeners.ts; missing it costs at most LISTENERS_TTL_MS).
    [BROADCASTS.subscriptionsChanged.name]() {
      this.listeners.forget();
    },
  },

  actions: {
    ...subscriptionActions,
    ...subscriptionEditActions,
    ...eventTypeActions,
    ...deliveryActions,
    ...recoveryActions,
    ...feedActions,
  },

  methods: {
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
            await fanOut(
              this.fanOutWrites,
              this.grants,
              this.listeners,
              event,
              this.worker?.handOff,
              lineWaitsOf((this.settings as WebhooksSettings).webhooks),
            );
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
    this.listeners = new SubscriptionListeners(this.db);
    this.fanOutWrites = new GroupCommit(this.db);
    this.grants = new ClientGrants((ids) =>
      this.broker.call<Principal[], { ids: number[] }>("clients.principals", { ids }),
    );
  },

  started() {
    const settings = this.settings as WebhooksSettings;
    // Resolves the keys first: without them (postgres://) the process refuses to start.
    const worker = new WebhooksWorker({
      db: this.db,
      logger: this.logger,
      webhooks: settings.webhooks,
      retentionIntervalMs: settings.outbox.retentionIntervalMs,
      keys: settings.secrets,
      grants: this.grants,
      ready: () => this.broker.started,
      // With a transporter the channels are JetStream's (shared/messaging/channels.ts).
      sendFirst: this.broker.transit !== undefined,
    });
    this.worker = worker;
    this.secrets = worker.secrets;
    worker.start();
    // At SIGTERM, finish the attempts under way alongside the gateway's drain, not after it.
    onShutdown(this.broker, () => worker.drain());
  },

  async stopped() {
    await this.worker?.stop();
  },
};

export default webhooksService;
