/**
 * The outbox relay: publishes a service's outbox rows (shared/messaging/outbox.ts) on their channels
 * (shared/messaging/events.ts, shared/messaging/channels.ts) and marks a row published only once the publish was
 * acknowledged. A crash between the two re-publishes the row; nothing is dropped. Consumers are
 * idempotent, and JetStream stores a quick re-publish once (the event id is its msgID).
 *
 * A service adds `outboxRelayMixin("<schema>")` to its mixins, after databaseMixin. The relay
 * runs a round at once after a commit of this process that appended events, and again straight
 * away while it finds full batches. Every event is written by a process of its own service, whose
 * commit wakes its own relay: the rounds every OUTBOX_RELAY_INTERVAL_MS (2 s by default) are only
 * the fallback for rows nobody was woken for — a process that died between its commit and its
 * relay's round, a commit while the relay backed off — and, being statements, the relay's whole
 * cost while nothing happens. While publishing fails it backs off (from FIRST_RETRY_MS up to
 * MAX_BACKOFF_MS between rounds, whatever the interval) and commits no longer wake it; its
 * failures are logged once and then summed up (shared/messaging/outbox-relay-health.ts), and
 * /readyz and /metrics say how long they have lasted.
 *
 * A round is two short statements with the publish between them, and no transaction open
 * while it publishes: a publish may wait on the broker for as long as NATS is away, and an open
 * transaction would hold a connection and its row locks (and, on PGlite's single connection,
 * block the in-process consumers the publish waits for). First the round claims a batch for a
 * lease (`FOR UPDATE SKIP LOCKED`, so replicas take different rows); then it settles the claim:
 * the acknowledged rows are sent, the others released. A relay that dies holding a claim lets
 * the lease lapse, and any relay takes the rows again. A publish still pending when the lease
 * ends is given up, so every step of a round happens inside its lease; a publish that JetStream
 * has not acknowledged within PUBLISH_ACK_TIMEOUT_MS is given up sooner, so the rest of its batch
 * is settled without it.
 */
import type { Knex } from "knex";
import type { Service, ServiceBroker, ServiceSchema } from "moleculer";
import { channelOf, type DomainEvent } from "./events";
import { countPrunedRows, countPublishFailures, countUnheardEvents } from "../observability/metrics";
import type { CheckState, EventFlowProbes } from "../observability/readiness";
import {
  claimUnpublished,
  onEventsCommitted,
  outboxLagSeconds,
  pruneSentEvents,
  settleClaim,
  type Claim,
} from "./outbox";
import { eventFlowChecks, RelayHealth, type RoundFailure } from "./outbox-relay-health";
import { BROADCASTS } from "./events";
import { LISTENED_EVENTS_ACTION, ListenedEvents } from "./listened-events";
import { PeriodicJob, pruneInBatches } from "../database/periodic-job";
import { currentTraceparent, resumeTrace, SpanKind } from "../observability/tracing";
import type { OutboxSettings, StorageSettings } from "../service-settings";
import { AT_ONCE, PollingLoop } from "../polling-loop";
import "../types";

/** Rows per round: enough to drain a burst quickly, small enough to keep statements short. */
const BATCH = 100;
/**
 * How long a claim holds its rows: far beyond an acknowledged publish (milliseconds), short
 * enough that rows a dead relay held go out again soon.
 */
export const DEFAULT_LEASE_MS = 30_000;
/** The least time between two rounds that published something (added latency, at most). */
const BUSY_ROUND_GAP_MS = 20;
/**
 * While publishing fails (broker down, a stream electing its leader, no consumer yet), rounds
 * slow down to at most this pause: once the stream is back, events go out within about a second.
 * The same pause while the broker or its channel adapter is not connected (a round cannot
 * publish, and no commit may come to wake the relay once it is).
 */
const MAX_BACKOFF_MS = 1_000;
/** The pause after a first failed round (or the interval, if shorter); it doubles with each failure. */
const FIRST_RETRY_MS = 200;
/**
 * How long a publish waits for JetStream's acknowledgement (nats.js's default is 5 s): a publish
 * sent to a node that has just died is given up after this, and the round settles the rest of its
 * batch. A publish given up may still have been stored: the next one carries the same msgID, and
 * JetStream keeps one. The in-process adapter (embedded) has no acknowledgement and ignores it.
 */
export const PUBLISH_ACK_TIMEOUT_MS = 2_000;

export interface OutboxRelayOptions {
  broker: ServiceBroker;
  db: Knex;
  schema: string;
  logger: Service["logger"];
  intervalMs: number;
  /** How long a round's claim holds its rows (DEFAULT_LEASE_MS). */
  leaseMs?: number;
  /** Who listens (listened-events.ts): an event nobody does is settled unpublished. Absent: every event is published. */
  listened?: ListenedEvents;
}

export class OutboxRelay {
  private readonly loop = new PollingLoop({ round: () => this.round() });
  private stopListening: (() => void) | null = null;
  private readonly health: RelayHealth;

  constructor(private readonly opts: OutboxRelayOptions) {
    this.health = new RelayHealth((line) => opts.logger.warn(`Outbox relay of "${opts.schema}": ${line}`));
  }

  start(): void {
    if (this.loop.running) return;
    this.stopListening = onEventsCommitted(this.opts.schema, () => this.wakeForCommit());
    this.loop.start();
  }

  async stop(): Promise<void> {
    this.stopListening?.();
    await this.loop.stop();
  }

  /** One round; resolves to the number of rows settled as sent (published, or heard by nobody). Exposed for tests. */
  async relayOnce(): Promise<number> {
    const { db, schema } = this.opts;
    const claim = await claimUnpublished(db, schema, BATCH, this.leaseMs);
    const unheard = (await this.opts.listened?.unheard(claim.events)) ?? [];
    const heard = unheard.length === 0 ? claim.events : claim.events.filter((e) => !unheard.includes(e));
    if (claim.events.length === 0 || heard.length === 0) this.health.roundSucceeded();
    if (claim.events.length === 0) return 0;
    const published = heard.length > 0 ? await this.publishWithinLease({ ...claim, events: heard }) : [];
    await settleClaim(db, schema, claim, [...published, ...unheard.map((e) => e.id)]);
    countUnheardEvents(schema, unheard.length);
    return published.length + unheard.length;
  }

  private get leaseMs(): number {
    return this.opts.leaseMs ?? DEFAULT_LEASE_MS;
  }

  private async round(): Promise<number | typeof AT_ONCE> {
    if (!this.canPublish()) return Math.min(this.opts.intervalMs, MAX_BACKOFF_MS);
    let published = 0;
    try {
      published = await this.relayOnce();
    } catch (err) {
      this.health.roundFailed({ error: err, failedPublishes: 0 });
    }
    // A full batch means more may be waiting: go on without sleeping. After a round that did
    // some work, pause briefly even if woken: under load, events then travel in batches
    // (one claim for many) instead of one round per commit.
    if (published >= BATCH) return AT_ONCE;
    if (published > 0 && this.loop.running) await new Promise((resolve) => setTimeout(resolve, BUSY_ROUND_GAP_MS));
    return this.pauseMs();
  }

  /** The interval while publishing works; after failed rounds, a back-off that does not depend on it beyond FIRST_RETRY_MS. */
  private pauseMs(): number {
    const failures = this.health.consecutiveFailedRounds;
    if (failures === 0) return this.opts.intervalMs;
    const firstRetryMs = Math.min(this.opts.intervalMs, FIRST_RETRY_MS);
    return Math.min(firstRetryMs * 2 ** Math.min(failures, 10), MAX_BACKOFF_MS);
  }

  /**
   * A commit wakes the relay for its events at once, but not while it backs off (a publish of the
   * last round failed): each new order then started another round that failed like the last,
   * and the back-off never grew.
   */
  private wakeForCommit(): void {
    if (this.health.consecutiveFailedRounds === 0) this.loop.wake();
  }

  /** Milliseconds its publishing has failed in a row (0 while it works): for the probes. */
  failingForMs(): number {
    return this.health.failingForMs();
  }

  /** Before the broker and its channel adapter are up, publishing can only fail. */
  private canPublish(): boolean {
    return this.opts.broker.started && this.opts.broker.channelAdapter?.connected === true;
  }

  /** The ids of the claimed events whose publish was acknowledged before the lease ended. */
  private async publishWithinLease(claim: Claim): Promise<string[]> {
    let leaseEnded: NodeJS.Timeout | undefined;
    const leaseEnd = new Promise<never>((_, reject) => {
      leaseEnded = setTimeout(
        () => reject(new Error(`no acknowledgement within the ${this.leaseMs} ms lease`)),
        this.leaseMs,
      );
    });
    const results = await Promise.allSettled(claim.events.map((e) => Promise.race([this.publish(e), leaseEnd])));
    clearTimeout(leaseEnded);
    const published = claim.events.filter((_, i) => results[i].status === "fulfilled").map((e) => e.id);
    this.recordRound(
      published.length,
      results.filter((r): r is PromiseRejectedResult => r.status === "rejected"),
    );
    return published;
  }

  /**
   * A round whose every publish failed has failed; one that published something has not (for
   * the probes), though any failed publish keeps the back-off growing.
   */
  private recordRound(published: number, failures: PromiseRejectedResult[]): void {
    countPublishFailures(this.opts.schema, failures.length);
    const failure: RoundFailure | undefined =
      failures.length > 0 ? { error: failures[0].reason, failedPublishes: failures.length } : undefined;
    if (published === 0 && failure) this.health.roundFailed(failure);
    else this.health.roundSucceeded(failure);
  }

  private async publish(e: DomainEvent): Promise<unknown> {
    const channel = channelOf(e.event);
    // A span under the trace the row was appended in; the message carries it on to the consumer.
    return resumeTrace(
      e.traceparent,
      `publish ${channel}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: { "messaging.destination.name": channel, "messaging.message.id": e.id },
      },
      () => {
        const traceparent = currentTraceparent();
        // The event id doubles as JetStream's de-duplication id: a quick re-publish is stored once.
        return this.opts.broker.sendToChannel(channel, traceparent ? { ...e, traceparent } : e, {
          msgID: e.id,
          timeout: PUBLISH_ACK_TIMEOUT_MS,
        });
      },
    );
  }
}

/** The service the mixin is part of: databaseMixin gave it `db`. */
type RelayHost = Service & {
  db: Knex;
  outboxRelay?: OutboxRelay;
  outboxRetention?: PeriodicJob;
  listenedEvents?: ListenedEvents;
};

/**
 * How long a relay waits for the webhooks service to name the listened events: when it does not
 * answer, the round publishes everything, so a webhooks outage slows no event by more than this.
 */
const LISTENED_EVENTS_CALL_TIMEOUT_MS = 500;

/**
 * Sent rows are kept OUTBOX_RETENTION (to look into what was published), then pruned, once per
 * RETENTION_INTERVAL across the replicas (`<schema>.job_runs`): every sent event holds the
 * entity's full representation, so without it the outbox outgrows the data it describes.
 */
export function outboxRetentionJob(
  host: Pick<RelayHost, "db" | "logger"> & { broker?: Pick<ServiceBroker, "started"> },
  schema: string,
  cfg: OutboxSettings,
): PeriodicJob {
  return new PeriodicJob({
    ready: host.broker ? () => host.broker!.started : undefined,
    db: host.db,
    schema,
    job: "outbox retention",
    everyMs: cfg.retentionIntervalMs,
    logger: host.logger,
    run: async (keepGoing) => {
      const pruned = await pruneInBatches(
        (limit) => pruneSentEvents(host.db, schema, cfg.retentionMs, limit),
        keepGoing,
      );
      countPrunedRows(`${schema}.outbox`, pruned);
      if (pruned > 0) host.logger.info(`Outbox retention: pruned ${pruned} sent events of "${schema}".`);
    },
  });
}

export function outboxRelayMixin(schema: string): Partial<ServiceSchema> {
  return {
    methods: {
      /** This service's part of /readyz about its events (shared/observability/readiness.ts). */
      async eventChecks(this: RelayHost): Promise<{ publishing: CheckState; outbox: CheckState }> {
        const { stalledAfterMs } = (this.settings as StorageSettings).outbox;
        const oldest = await outboxLagSeconds(this.db, schema).catch(() => null);
        return eventFlowChecks(this.outboxRelay?.failingForMs() ?? 0, oldest, stalledAfterMs);
      },
      publishingFailingSeconds(this: RelayHost): number {
        return (this.outboxRelay?.failingForMs() ?? 0) / 1000;
      },
    } satisfies EventFlowProbes & ThisType<RelayHost>,
    events: {
      // A subscription was created, enabled or moved: ask who listens before settling the next event.
      [BROADCASTS.subscriptionsChanged.name](this: RelayHost) {
        this.listenedEvents?.forget();
      },
    },
    started(this: RelayHost) {
      const cfg = (this.settings as StorageSettings).outbox;
      this.listenedEvents = new ListenedEvents(() =>
        this.broker.call<string[], Record<string, never>>(
          LISTENED_EVENTS_ACTION,
          {},
          { timeout: LISTENED_EVENTS_CALL_TIMEOUT_MS },
        ),
      );
      this.outboxRelay = new OutboxRelay({
        broker: this.broker,
        db: this.db,
        schema,
        logger: this.logger,
        intervalMs: cfg.relayIntervalMs,
        listened: this.listenedEvents,
      });
      this.outboxRelay.start();
      this.outboxRetention = outboxRetentionJob(this, schema, cfg);
      this.outboxRetention.start();
    },
    async stopped(this: RelayHost) {
      await Promise.all([this.outboxRelay?.stop(), this.outboxRetention?.stop()]);
    },
  } as unknown as Partial<ServiceSchema>;
}
