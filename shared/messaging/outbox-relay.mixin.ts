/**
 * The outbox relay: publishes a service's outbox rows (shared/messaging/outbox.ts) on their channels
 * (shared/messaging/events.ts, shared/messaging/channels.ts) and marks a row published only once the publish was
 * acknowledged. A crash between the two re-publishes the row; nothing is dropped. Consumers are
 * idempotent, and JetStream stores a quick re-publish once (the event id is its msgID).
 *
 * A service adds `outboxRelayMixin("<schema>")` to its mixins, after databaseMixin. The relay
 * runs a round every OUTBOX_RELAY_INTERVAL_MS, at once after a commit of this process that
 * appended events, and again straight away while it finds full batches.
 *
 * A round is two short statements with the publish between them, and no transaction open
 * while it publishes: a publish may wait on the broker for as long as NATS is away, and an open
 * transaction would hold a connection and its row locks (and, on PGlite's single connection,
 * block the in-process consumers the publish waits for). First the round claims a batch for a
 * lease (`FOR UPDATE SKIP LOCKED`, so replicas take different rows); then it settles the claim:
 * the acknowledged rows are sent, the others released. A relay that dies holding a claim lets
 * the lease lapse, and any relay takes the rows again. A publish still pending when the lease
 * ends is given up, so every step of a round happens inside its lease.
 */
import type { Knex } from "knex";
import type { Service, ServiceBroker, ServiceSchema } from "moleculer";
import { channelOf, type DomainEvent } from "./events";
import { countPrunedRows } from "../observability/metrics";
import { claimUnpublished, onEventsCommitted, pruneSentEvents, settleClaim, type Claim } from "./outbox";
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
/** While a failure repeats, it is logged at most this often. */
const FAILURE_LOG_INTERVAL_MS = 30_000;
/** While publishing fails (broker down, no consumer yet), rounds slow down to at most this pause. */
const MAX_BACKOFF_MS = 5_000;

export interface OutboxRelayOptions {
  broker: ServiceBroker;
  db: Knex;
  schema: string;
  logger: Service["logger"];
  intervalMs: number;
  /** How long a round's claim holds its rows (DEFAULT_LEASE_MS). */
  leaseMs?: number;
}

export class OutboxRelay {
  private readonly loop = new PollingLoop({ round: () => this.round() });
  private stopListening: (() => void) | null = null;
  private lastFailureLog = { message: "", at: 0 };
  private failedRounds = 0;

  constructor(private readonly opts: OutboxRelayOptions) {}

  start(): void {
    if (this.loop.running) return;
    this.stopListening = onEventsCommitted(this.opts.schema, () => this.loop.wake());
    this.loop.start();
  }

  async stop(): Promise<void> {
    this.stopListening?.();
    await this.loop.stop();
  }

  /** One round; resolves to the number of rows published. Exposed for tests. */
  async relayOnce(): Promise<number> {
    const { db, schema } = this.opts;
    const claim = await claimUnpublished(db, schema, BATCH, this.leaseMs);
    if (claim.events.length === 0) return 0;
    const published = await this.publishWithinLease(claim);
    await settleClaim(db, schema, claim, published);
    return published.length;
  }

  private get leaseMs(): number {
    return this.opts.leaseMs ?? DEFAULT_LEASE_MS;
  }

  private async round(): Promise<number | typeof AT_ONCE> {
    let published = 0;
    if (this.canPublish()) {
      try {
        published = await this.relayOnce();
      } catch (err) {
        this.logFailure(err);
        this.failedRounds += 1;
      }
    }
    // A full batch means more may be waiting: go on without sleeping. After a round that did
    // some work, pause briefly even if woken: under load, events then travel in batches
    // (one claim for many) instead of one round per commit.
    if (published >= BATCH) return AT_ONCE;
    if (published > 0 && this.loop.running) await new Promise((resolve) => setTimeout(resolve, BUSY_ROUND_GAP_MS));
    return this.pauseMs();
  }

  private pauseMs(): number {
    return Math.min(
      this.opts.intervalMs * 2 ** Math.min(this.failedRounds, 10),
      Math.max(this.opts.intervalMs, MAX_BACKOFF_MS),
    );
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
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) this.logFailure(failed.reason);
    this.failedRounds = published.length > 0 || !failed ? 0 : this.failedRounds + 1;
    return published;
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
        return this.opts.broker.sendToChannel(channel, traceparent ? { ...e, traceparent } : e, { msgID: e.id });
      },
    );
  }

  private logFailure(err: unknown): void {
    const message = (err as Error | null)?.message ?? String(err);
    const now = Date.now();
    if (message === this.lastFailureLog.message && now - this.lastFailureLog.at < FAILURE_LOG_INTERVAL_MS) return;
    this.lastFailureLog = { message, at: now };
    this.opts.logger.warn(`Outbox relay of "${this.opts.schema}": publishing failed, will retry: ${message}`);
  }
}

/** The service the mixin is part of: databaseMixin gave it `db`. */
type RelayHost = Service & { db: Knex; outboxRelay?: OutboxRelay; outboxRetention?: PeriodicJob };

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
    started(this: RelayHost) {
      const cfg = (this.settings as StorageSettings).outbox;
      this.outboxRelay = new OutboxRelay({
        broker: this.broker,
        db: this.db,
        schema,
        logger: this.logger,
        intervalMs: cfg.relayIntervalMs,
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
