/**
 * The dispatcher: keeps up to WEBHOOK_DISPATCH_BATCH deliveries in flight, and at most
 * WEBHOOK_ENDPOINT_CONCURRENCY of them to one endpoint (one while that endpoint is on probation
 * after a time-out: webhooks.origin-slots.ts), so a hanging subscriber cannot hold the slots
 * everyone else's deliveries need. It claims due deliveries (webhooks.deliveries.repository.ts
 * `claimDue`: fair between endpoints, SKIP LOCKED and a lease, committed before sending), sends
 * each, records every attempt and schedules the next one in the row as the retry policy says
 * (webhooks.retry-policy.ts) — the outcomes that end together in one statement
 * (webhooks.outcome-recorder.ts). A fresh event's deliveries need no claim when this process has
 * slots free for them: the fan-out reserves the slots, stores the deliveries already claimed and
 * hands them over (webhooks.direct-hand-off.ts, which the dispatcher implements), so they are
 * sent at once. Any number of webhooks processes run one each and share the work; a delivery is
 * never sent by two of them at once, and one whose dispatcher died is sent again once its lease
 * ends. The worker (webhooks.worker.ts) builds it with what it needs passed in.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { observeWebhookAttempt, type WebhookAttemptOutcome } from "../../shared/observability/metrics";
import { withRequestId } from "../../shared/observability/request-context";
import { resumeTrace, SpanKind } from "../../shared/observability/tracing";
import { PollingLoop } from "../../shared/polling-loop";
import { OriginSlots } from "./webhooks.origin-slots";
import type { SubscriptionHealth } from "./webhooks.subscription-health";
import { OutcomeRecorder, type OutcomeRecorderOptions } from "./webhooks.outcome-recorder";
import type { AttemptRecord } from "./webhooks.attempts.repository";
import { claimDue, storeClaimed, type ClaimedDelivery } from "./webhooks.deliveries.repository";
import { isUnstored, SentFirst } from "./webhooks.send-first";
import type { DirectHandOff, HandOffTarget, Reservation } from "./webhooks.direct-hand-off";
import { NOTHING_TO_PUT_BACK, type Admission, type RateLimiter } from "./webhooks.rate-limiter";
import { judge, type RetrySettings } from "./webhooks.retry-policy";
import type { AttemptOutcome, OutgoingWebhook } from "./webhooks.sender";

export interface DispatcherOptions {
  db: Knex;
  logger: Service["logger"];
  send(webhook: OutgoingWebhook): Promise<AttemptOutcome>;
  /**
   * The claimed deliveries whose client is still entitled to them right now; it cancels the
   * others (webhooks.entitlement.ts). Throwing sends nothing: the claims wait for their lease to end.
   */
  entitledOnly(claimed: ClaimedDelivery[]): Promise<ClaimedDelivery[]>;
  batch: number;
  /** Attempts in flight to one endpoint (a URL origin) at most. */
  endpointConcurrency: number;
  intervalMs: number;
  timeoutMs: number;
  /** What each outcome means (webhooks.retry-policy.ts). */
  retry: RetrySettings;
  /** Acts on what the outcomes say about their subscriptions (webhooks.subscription-health.ts). */
  health: SubscriptionHealth;
  /**
   * Subscriptions' rate limits (webhooks.rate-limiter.ts): which claimed deliveries may go now
   * (it puts the others back), and which subscriptions the fan-out must not hand over directly.
   */
  rateLimits?: Pick<RateLimiter, "admit" | "isLimited">;
  /**
   * Fresh events arrive from a channel that holds them until acknowledged (JetStream): their
   * deliveries may be sent before they are stored (webhooks.send-first.ts), and a fan-out may
   * wait for room. Not in embedded mode, whose in-process channel makes the publisher wait.
   */
  sendFirst?: boolean;
  /** How long a fan-out waits for room (WAIT_FOR_ROOM_MS unless a test says otherwise). */
  waitForRoomMs?: number;
  /** How long a delivery sent first may stay unstored (webhooks.send-first.ts HOLD_MS unless a test says otherwise). */
  holdMs?: number;
  /** WEBHOOK_ORDERING_HOLD (webhooks.ordering.ts): what the next delivery of a line waits out once released. */
  orderingHoldMs?: number;
  /** The changes an outcome written queued missed while its attempt was in flight (webhooks.late-changes.ts). */
  changesMissed?: OutcomeRecorderOptions["changesMissed"];
}

/** The longest a fan-out waits for room in the batch (`reserve`), far below its channel's acknowledgement wait (10 s). */
export const WAIT_FOR_ROOM_MS = 2_000;
/** The share of the batch fresh events waiting for room leave to the claims of due deliveries. */
const CLAIM_SHARE = 0.2;

/** A fan-out waiting for room in the batch. */
interface Waiter {
  targets: readonly HandOffTarget[];
  /** Free slots it waits for (`roomNeeded`). */
  need: number;
  resolve(reservation: Reservation): void;
  timer: NodeJS.Timeout;
}

/** A round that put deliveries back for a rate limit looks again when the first is due, but not sooner than this. */
const MIN_RATE_LIMIT_PAUSE_MS = 10;

/**
 * How long a claim holds a delivery: its attempt times out after `timeoutMs`, so twice that
 * plus a margin leaves room to record the outcome; only a dispatcher that died (or stalled
 * far beyond its time-out) lets a lease run out while its attempt is still going.
 */
export function leaseMsFor(timeoutMs: number): number {
  return 2 * timeoutMs + 2_000;
}

const METRIC_OUTCOME: Record<AttemptOutcome["kind"], WebhookAttemptOutcome> = {
  delivered: "delivered",
  rejected: "http_error",
  timeout: "timeout",
  error: "network_error",
  refused: "blocked",
};

export class Dispatcher implements DirectHandOff {
  private readonly loop = new PollingLoop({ round: () => this.round() });
  /** Slots fan-outs hold for deliveries they are storing claimed: part of the batch. */
  private reserved = 0;
  private readonly inFlight = new Set<Promise<void>>();
  /** The last claim filled every free slot, so more may be due as soon as slots free up. */
  private moreDue = false;
  /** Endpoints the claims filled to their cap: more of theirs may be due once their slots free up. */
  private readonly endpointsWithMore = new Set<string>();
  private readonly slots: OriginSlots;
  readonly leaseMs: number;
  private readonly recorder: OutcomeRecorder;
  private readonly waiting: Waiter[] = [];

  constructor(private readonly opts: DispatcherOptions) {
    this.leaseMs = leaseMsFor(opts.timeoutMs);
    this.slots = new OriginSlots(opts.endpointConcurrency);
    this.recorder = new OutcomeRecorder({
      db: opts.db,
      logger: opts.logger,
      health: opts.health,
      orderingHoldMs: opts.orderingHoldMs,
      changesMissed: opts.changesMissed,
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops claiming, then waits for the attempts under way to be sent and recorded. */
  async stop(): Promise<void> {
    await this.loop.stop();
    // The fan-outs waiting for room go on with nothing: their deliveries are stored due.
    this.serveWaiting();
    await Promise.allSettled([...this.inFlight]);
    await this.recorder.drain();
  }

  /**
   * One slot for each of these subscriptions whose endpoint has one free, while the batch has
   * room: their deliveries skip the claim statement and the wait for the next round. Nothing is
   * reserved while older deliveries are known to be due (the last claim filled every free slot,
   * or every slot of that endpoint): under load they go first, in the claim's order, rather
   * than be overtaken by every fresh event. Nothing either once the dispatcher is stopping.
   *
   * With `sendFirst`, the event is held in a channel that queues the rest (JetStream): when the
   * batch has no room for them all, the fan-out waits for room, first come first served, up to
   * WAIT_FOR_ROOM_MS, rather than store them due. A burst then waits in the stream, not in the
   * table, and each of its deliveries is written once (webhooks.send-first.ts). A share of the
   * batch (CLAIM_SHARE) is left to the claims, so due retries are never starved by fresh events.
   */
  reserve(targets: readonly HandOffTarget[]): Promise<Reservation> {
    const need = this.roomNeeded(targets);
    if (!this.opts.sendFirst || !this.mayReserve() || need === 0) return Promise.resolve(this.take(targets));
    if (this.waiting.length === 0 && this.room() >= need) return Promise.resolve(this.take(targets));
    return new Promise((resolve) => {
      const waiter: Waiter = {
        targets,
        need,
        resolve,
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          // Whatever is free now; the rest is stored due.
          resolve(this.take(targets));
        }, this.opts.waitForRoomMs ?? WAIT_FOR_ROOM_MS),
      };
      waiter.timer.unref();
      this.waiting.push(waiter);
    });
  }

  /** Fresh deliveries may take slots: running, and no older ones known to be due. */
  private mayReserve(): boolean {
    return this.loop.running && !this.moreDue;
  }

  /** Slots of the batch a waiting fan-out may take now (the claims' share left aside). */
  private room(): number {
    const claimShare = Math.floor(this.opts.batch * CLAIM_SHARE);
    return this.opts.batch - claimShare - this.inFlight.size - this.reserved;
  }

  /** Slots worth waiting for: those of deliveries that will be sent first (not `per_entity`), as many as the room can ever hold. */
  private roomNeeded(targets: readonly HandOffTarget[]): number {
    const sentFirst = targets.filter((t) => t.ordering !== "per_entity").length;
    return Math.min(sentFirst, this.opts.batch - Math.floor(this.opts.batch * CLAIM_SHARE));
  }

  /** Slots freed: the fan-outs waiting for room take it in turn (or, if none may reserve now, go on with nothing). */
  private serveWaiting(): void {
    while (this.waiting.length > 0) {
      const head = this.waiting[0];
      if (this.mayReserve() && this.room() < head.need) return;
      this.waiting.shift();
      clearTimeout(head.timer);
      head.resolve(this.take(head.targets));
    }
  }

  /** The reservation of what is free now. */
  private take(targets: readonly HandOffTarget[]): Reservation {
    const taken: HandOffTarget[] = [];
    for (const target of this.mayReserve() ? targets : []) {
      if (this.inFlight.size + this.reserved >= this.opts.batch) break;
      if (this.slots.free(target.endpoint) === 0 || this.endpointsWithMore.has(target.endpoint)) continue;
      // Its sends are counted in the database: it goes the claim's way.
      if (this.opts.rateLimits?.isLimited(target.id)) continue;
      this.slots.take(target.endpoint);
      this.reserved += 1;
      taken.push(target);
    }
    let settled = false;
    return {
      subscriptionIds: taken.map((t) => t.id),
      sendFirst: this.opts.sendFirst === true,
      settle: (claimed) => {
        if (settled) return Promise.resolve();
        settled = true;
        this.reserved -= taken.length;
        const byId = new Map(claimed.map((d) => [Number(d.subscription_id), d]));
        const stored: Promise<void>[] = [];
        for (const { id, endpoint } of taken) {
          const delivery = byId.get(id);
          if (delivery && this.loop.running) {
            stored.push(this.launch(delivery, { slotTaken: true }));
            continue;
          }
          this.slots.giveBack(endpoint);
          // Stopping meanwhile: a claimed one is left claimed, and sent by anyone once its lease
          // ends; an unstored one is not sent, and its event stays unacknowledged.
          if (delivery && isUnstored(delivery))
            stored.push(Promise.reject(new Error("webhooks dispatcher stopping: the event is offered again")));
        }
        this.serveWaiting();
        return Promise.all(stored).then(() => undefined);
      },
    };
  }

  /**
   * A fresh event's deliveries to these endpoints were stored due rather than sent at once: look
   * now when this process could send one of them — its endpoint has a slot free and no backlog
   * of its own (whose freed slots wake the claim, `finished`), or every slot of the batch was
   * taken. An endpoint whose slots are all held (a hanging one with its probe out) waits for
   * its own: waking for it would cost a claim per event that finds nothing, and hold back every
   * other subscriber's fresh deliveries behind `moreDue` until that claim ends.
   */
  queued(endpoints: readonly string[]): void {
    if (endpoints.some((endpoint) => this.slots.free(endpoint) > 0 && !this.endpointsWithMore.has(endpoint)))
      this.wake();
  }

  /**
   * New deliveries are due: look now rather than at the next round. Until a claim finds fewer
   * than it could take, they count as a backlog, which fresh events do not overtake (`reserve`).
   */
  wake(): void {
    this.moreDue = true;
    this.loop.wake();
  }

  /** Claims what the free slots allow and sends it; the next round comes when slots free up, or after the interval. */
  private async round(): Promise<number> {
    const free = this.opts.batch - this.inFlight.size - this.reserved;
    if (free <= 0) return this.opts.intervalMs;
    const { claimed, admission } = await this.claim(free);
    for (const delivery of admission.admitted) void this.launch(delivery);
    for (const { endpoint } of admission.admitted) {
      if (this.slots.free(endpoint) === 0) this.endpointsWithMore.add(endpoint);
    }
    this.moreDue = claimed.length === free;
    if (admission.nextDueInMs === null) return this.opts.intervalMs;
    // Failing, they stay claimed until their lease ends, and are sent then.
    await admission
      .putBack()
      .catch((err: Error) =>
        this.opts.logger.warn(`Webhook dispatcher: putting back rate-limited deliveries failed: ${err.message}`),
      );
    return Math.min(this.opts.intervalMs, Math.max(MIN_RATE_LIMIT_PAUSE_MS, admission.nextDueInMs));
  }

  /** Due deliveries, fairly between endpoints, that their clients may still receive, and what their rate limits allow now. */
  private async claim(free: number): Promise<{ claimed: ClaimedDelivery[]; admission: Admission }> {
    let claimed: ClaimedDelivery[] = [];
    try {
      const due = await claimDue(this.opts.db, free, this.leaseMs, {
        perEndpoint: this.opts.endpointConcurrency,
        limits: this.slots.limits(),
      });
      claimed = due.length > 0 ? await this.opts.entitledOnly(due) : due;
      const admission = this.opts.rateLimits
        ? await this.opts.rateLimits.admit(claimed)
        : { admitted: claimed, nextDueInMs: null, putBack: NOTHING_TO_PUT_BACK };
      return { claimed, admission };
    } catch (err) {
      this.opts.logger.warn(`Webhook dispatcher: claiming deliveries failed, will retry: ${(err as Error).message}`);
      return { claimed, admission: { admitted: [], nextDueInMs: null, putBack: NOTHING_TO_PUT_BACK } };
    }
  }

  /** Sends it; resolves once its row exists (at once, unless it was sent before it was stored: webhooks.send-first.ts). */
  private launch(delivery: ClaimedDelivery, { slotTaken = false } = {}): Promise<void> {
    if (!slotTaken) this.slots.take(delivery.endpoint);
    const first = isUnstored(delivery)
      ? new SentFirst(delivery, (d) => storeClaimed(this.opts.db, d, this.leaseMs), this.opts.holdMs)
      : undefined;
    // Log lines of the attempt name the request that raised the event; its span (and the
    // request's traceparent header) continues the trace of the fan-out that recorded it.
    const attempt: Promise<void> = withRequestId(delivery.request_id, () =>
      resumeTrace(
        delivery.traceparent,
        `deliver ${delivery.event}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            "webhook.id": delivery.webhook_id,
            "webhook.attempt": delivery.attempt_count + 1,
            "webhook.endpoint": delivery.endpoint,
          },
        },
        (span) =>
          this.attempt(delivery, first).then((outcome) => (span.setAttribute("webhook.outcome", outcome), outcome)),
      ),
    )
      .catch((): AttemptOutcome["kind"] => {
        first?.outcomeWritten(false);
        return "error";
      })
      .then((outcome) => this.finished(attempt, delivery.endpoint, outcome));
    this.inFlight.add(attempt);
    return first?.stored ?? Promise.resolve();
  }

  private finished(attempt: Promise<void>, endpoint: string, outcome: AttemptOutcome["kind"]): void {
    this.inFlight.delete(attempt);
    const wasOnProbation = this.slots.onProbation(endpoint);
    this.slots.release(endpoint, outcome);
    this.serveWaiting();
    if (!wasOnProbation && this.slots.onProbation(endpoint)) {
      this.opts.logger.warn(`Webhook endpoint ${endpoint} timed out: one attempt at a time to it until it answers.`);
    }
    // Under load, claim again once half the slots (of all, or of a capped endpoint with more
    // due) are free: one query per chunk, not per delivery.
    const batchHalfFree = this.moreDue && this.inFlight.size <= this.opts.batch / 2;
    const endpointHalfFree = this.endpointsWithMore.has(endpoint) && this.slots.halfFree(endpoint);
    if (endpointHalfFree) this.endpointsWithMore.delete(endpoint);
    if (batchHalfFree || endpointHalfFree) this.loop.wake();
  }

  private async attempt(delivery: ClaimedDelivery, first?: SentFirst): Promise<AttemptOutcome["kind"]> {
    const attemptedAt = new Date();
    const { previous_key: previousKey, previous_secret: previousSecret } = delivery;
    const outcome = await this.opts.send({
      url: delivery.url,
      event: delivery.event,
      key: delivery.key,
      secret: delivery.secret,
      signingKey: delivery.signing_key,
      previous:
        previousKey && previousSecret
          ? { key: previousKey, secret: previousSecret, signingKey: delivery.previous_signing_key }
          : null,
      webhookId: delivery.webhook_id,
      body: delivery.body,
      customHeaders: delivery.headers,
    });
    observeWebhookAttempt(METRIC_OUTCOME[outcome.kind], outcome.durationMs / 1000);
    const { verdict, next } = judge(outcome, delivery.attempt_count + 1, this.opts.retry);
    const answered = outcome.kind === "delivered" || outcome.kind === "rejected";
    const record: AttemptRecord = {
      attemptedAt,
      statusCode: answered ? outcome.statusCode : null,
      error: "error" in outcome ? outcome.error : null,
      durationMs: outcome.durationMs,
      trigger: delivery.trigger,
      ...(answered && outcome.response ? { response: outcome.response } : {}),
      paused: verdict.kind === "throttled",
    };
    // Written with the other outcomes that end about now. After a success the endpoint's slot
    // is freed at once: the delivery stays claimed (leased) until its outcome is written, so
    // nobody sends it again meanwhile (or, sent before it was stored, its event stays
    // unacknowledged). After a failure the slot waits for the write, so that a Retry-After pause
    // or a disabling is in force before the endpoint's next attempt.
    await first?.ended();
    const written = this.recorder.record({ delivery, attempt: record, next, verdict });
    if (first) void written.then((ok) => first.outcomeWritten(ok));
    if (verdict.kind !== "healthy") await written;
    // Settled, it releases the next delivery of its line (webhooks.ordering.ts): look for it now
    // rather than at the next round.
    if (delivery.in_line && next.status !== "pending") void written.then(() => this.loop.wake());
    // One line per attempt, under the request id that raised the event (never the key or secret).
    this.opts.logger.info(
      {
        deliveryId: delivery.id,
        webhookId: delivery.webhook_id,
        event: delivery.event,
        attempt: delivery.attempt_count + 1,
        outcome: outcome.kind,
        statusCode: record.statusCode,
        durationMs: outcome.durationMs,
        next: next.status,
      },
      "webhook attempt",
    );
    if (next.status === "failed")
      this.opts.logger.warn(
        `Webhook delivery ${delivery.id} (${delivery.webhook_id}) failed for good after ${delivery.attempt_count + 1} attempts.`,
      );
    return outcome.kind;
  }
}
