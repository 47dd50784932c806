/**
 * The outbox relay: publishes a service's outbox rows (shared/outbox.ts) on their channels
 * (shared/channels.ts) and marks a row published only once the publish was acknowledged. A
 * crash between the two re-publishes the row; nothing is dropped. Consumers are idempotent.
 *
 * A service adds `outboxRelayMixin("<schema>")` to its mixins, after databaseMixin. The relay
 * runs a round every OUTBOX_RELAY_INTERVAL_MS, at once after a commit of this process that
 * appended events, and again straight away while it finds full batches.
 *
 * On PostgreSQL each round is one transaction: the rows are claimed `FOR UPDATE SKIP LOCKED`,
 * so replicas of a service relay different rows, and the lock is held while publishing. PGlite
 * has a single connection: a transaction held while publishing would block the consumers of
 * an in-process channel, which need that connection to commit before the publish resolves.
 * There, the rows are read and marked outside a transaction; a PGlite database belongs to one
 * process, so no other relay shares them.
 */
import type { Knex } from "knex";
import type { Service, ServiceBroker, ServiceSchema } from "moleculer";
import { channelOf } from "./channels";
import { config } from "./config";
import { isPglite, type Db } from "./db";
import { claimUnpublished, markPublished, onEventsCommitted, type DomainEvent } from "./outbox";
import { WakeableSleep } from "./wakeable-sleep";
import "./types";

/** Rows per round: enough to drain a burst quickly, small enough to keep transactions short. */
const BATCH = 100;
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
  singleConnection: boolean;
}

export class OutboxRelay {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly sleep = new WakeableSleep();
  private stopListening: (() => void) | null = null;
  private lastFailureLog = { message: "", at: 0 };
  private failedRounds = 0;

  constructor(private readonly opts: OutboxRelayOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopListening = onEventsCommitted(this.opts.schema, () => this.sleep.wake());
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopListening?.();
    this.sleep.wake();
    await this.loop;
  }

  /** One round; resolves to the number of rows published. Exposed for tests. */
  async relayOnce(): Promise<number> {
    if (this.opts.singleConnection) {
      const events = await claimUnpublished(this.opts.db, this.opts.schema, BATCH);
      return this.publishAndMark(this.opts.db, events);
    }
    return this.opts.db.transaction(async (trx) => this.publishAndMark(trx, await claimUnpublished(trx, this.opts.schema, BATCH)));
  }

  private async run(): Promise<void> {
    while (this.running) {
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
      // (one transaction for many) instead of one round per commit.
      if (published < BATCH && this.running) {
        if (published > 0) await new Promise((resolve) => setTimeout(resolve, BUSY_ROUND_GAP_MS));
        await this.sleep.sleep(this.pauseMs());
      }
    }
  }

  private pauseMs(): number {
    return Math.min(this.opts.intervalMs * 2 ** Math.min(this.failedRounds, 10), Math.max(this.opts.intervalMs, MAX_BACKOFF_MS));
  }

  /** Before the broker and its channel adapter are up, publishing can only fail. */
  private canPublish(): boolean {
    return this.opts.broker.started && this.opts.broker.channelAdapter?.connected === true;
  }

  private async publishAndMark(db: Db, events: DomainEvent[]): Promise<number> {
    if (events.length === 0) return 0;
    const results = await Promise.allSettled(
      // The event id doubles as JetStream's de-duplication id: a quick re-publish is stored once.
      events.map((e) => this.opts.broker.sendToChannel(channelOf(e.event), e, { msgID: e.id })),
    );
    const published = events.filter((_, i) => results[i].status === "fulfilled").map((e) => e.id);
    if (published.length > 0) await markPublished(db, this.opts.schema, published);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) this.logFailure(failed.reason);
    this.failedRounds = published.length > 0 || !failed ? 0 : this.failedRounds + 1;
    return published.length;
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
type RelayHost = Service & { db: Knex; outboxRelay?: OutboxRelay };

export function outboxRelayMixin(schema: string): Partial<ServiceSchema> {
  return {
    started(this: RelayHost) {
      const cfg = config();
      this.outboxRelay = new OutboxRelay({
        broker: this.broker,
        db: this.db,
        schema,
        logger: this.logger,
        intervalMs: cfg.outboxRelayIntervalMs,
        singleConnection: isPglite(cfg.databaseUrl),
      });
      this.outboxRelay.start();
    },
    async stopped(this: RelayHost) {
      await this.outboxRelay?.stop();
    },
  } as unknown as Partial<ServiceSchema>;
}
