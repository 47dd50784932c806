/**
 * The background side of the webhooks service, composed in one place (as Svix's worker.rs): the
 * dispatcher, given the sender and the grants it sends with; the recoverer; the retention job;
 * subscription health and its /metrics figures; and the secrets the stored keys are sealed with.
 * The service (webhooks.service.ts) starts and stops it and reaches it through what it exposes;
 * nothing here calls back up into the service.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import type { Config } from "../../shared/config/config";
import type { PeriodicJob } from "../../shared/database/periodic-job";
import { reportWebhookHealthFrom } from "../../shared/observability/metrics";
import { rememberingOpener, type SecretBox } from "../../shared/security/secret-box";
import { secretBoxFor, type KeyConfig } from "../../shared/security/secrets-keyring";
import type { DirectHandOff } from "./webhooks.direct-hand-off";
import { Dispatcher } from "./webhooks.dispatcher";
import { entitledOnly } from "./webhooks.entitlement";
import { applyChangesMissed } from "./webhooks.late-changes";
import type { ClientGrants } from "./webhooks.grants";
import { RateLimiter } from "./webhooks.rate-limiter";
import { Recoverer, RECOVERY_LOOK_MS } from "./webhooks.recovery";
import { webhooksRetentionJob } from "./webhooks.retention";
import { sendWebhook } from "./webhooks.sender";
import { healthFigures, SubscriptionHealth } from "./webhooks.subscription-health";

export interface WorkerOptions {
  db: Knex;
  logger: Service["logger"];
  webhooks: Config["webhooks"];
  /** RETENTION_INTERVAL: how often one replica prunes. */
  retentionIntervalMs: number;
  /** Which keys seal the stored secrets (shared/security/secrets-keyring.ts). */
  keys: KeyConfig;
  /** The clients' current grants: the dispatcher asks them afresh before sending. */
  grants: ClientGrants;
  /** Whether every service of the broker has started (the retention job waits for it). */
  ready: () => boolean;
  /** Events come through JetStream, which holds them until acknowledged (the dispatcher's `sendFirst`). */
  sendFirst: boolean;
}

export class WebhooksWorker {
  /** Seals what is stored and opens it for the sender. */
  readonly secrets: SecretBox;
  private readonly dispatcher: Dispatcher;
  private readonly rateLimits: RateLimiter;
  private readonly recoverer: Recoverer;
  private readonly retention: PeriodicJob;
  private stopReportingHealth: (() => void) | null = null;

  /** Throws when the keys cannot be had (postgres:// without SECRETS_ENCRYPTION_KEYS): the process refuses to start. */
  constructor(private readonly opts: WorkerOptions) {
    const { db, logger, webhooks: cfg } = opts;
    this.secrets = secretBoxFor(opts.keys, (line) => logger.warn(line));
    const openedSecrets = rememberingOpener(this.secrets);
    this.rateLimits = new RateLimiter(db);
    this.dispatcher = new Dispatcher({
      db,
      logger,
      entitledOnly: (claimed) => entitledOnly(db, opts.grants, logger, claimed),
      changesMissed: (queued) => applyChangesMissed(db, opts.grants, logger, queued),
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
      health: new SubscriptionHealth({
        db,
        disableAfterMs: cfg.disableAfterMs,
        recoveredAfterMs: (cfg.retryScheduleSeconds[0] ?? 0) * 1000,
      }),
      rateLimits: this.rateLimits,
      sendFirst: opts.sendFirst,
      orderingHoldMs: cfg.orderingHoldMs,
    });
    const dispatcher = this.dispatcher;
    this.recoverer = new Recoverer({ db, logger, intervalMs: RECOVERY_LOOK_MS, queued: () => dispatcher.wake() });
    this.retention = webhooksRetentionJob({
      ready: opts.ready,
      db,
      logger,
      retentionMs: cfg.retentionMs,
      everyMs: opts.retentionIntervalMs,
    });
  }

  /** Where fan-out hands a fresh event's deliveries: this process's dispatcher. */
  get handOff(): DirectHandOff {
    return this.dispatcher;
  }

  start(): void {
    this.retention.start();
    const { db } = this.opts;
    this.stopReportingHealth = reportWebhookHealthFrom(() => healthFigures(db));
    this.dispatcher.start();
    this.recoverer.start();
  }

  /** Deliveries were queued (a test event, a redelivery): the dispatcher looks now. */
  deliveriesQueued(): void {
    this.dispatcher.wake();
  }

  /** A subscription's rate limit changed here: the dispatcher reads the limits again before its next send. */
  rateLimitsChanged(): void {
    this.rateLimits.changed();
  }

  /** A recovery was asked for: the recoverer looks now. */
  recoveryAsked(): void {
    this.recoverer.wake();
  }

  /** Sends no more and finishes the attempts under way (at SIGTERM, beside the gateway's drain). */
  async drain(): Promise<void> {
    await this.dispatcher.stop();
  }

  async stop(): Promise<void> {
    this.stopReportingHealth?.();
    await this.retention.stop();
    await this.recoverer.stop();
    await this.dispatcher.stop();
  }
}
