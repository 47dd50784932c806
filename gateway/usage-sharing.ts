/**
 * Rate limits that hold across gateway replicas. Each gateway counts in its own memory
 * (rate-limiter-flexible's RateLimiterMemory, so a request never waits for the network) and
 * tells the others what it counted: every FLUSH_INTERVAL_MS, or at once when one key's
 * unreported usage reaches EAGER_SHARE of its limit, it broadcasts the points it spent per
 * limiter and key; every other gateway adds them to its own counts with `penalty()`.
 * A client spreading requests over N replicas therefore overshoots a limit by at most what the
 * replicas counted but had not yet reported — about N × EAGER_SHARE of the limit — instead of
 * getting N times the limit. With one gateway (the embedded mode) nothing is broadcast.
 */
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
// The report travels between gateways as the `usageCounted` broadcast of the event contract.
import type { UsageReport } from "../shared/messaging/events";
import { PollingLoop } from "../shared/polling-loop";

export type PublishUsage = (report: UsageReport) => Promise<unknown> | void;

const FLUSH_INTERVAL_MS = 100;
const EAGER_SHARE = 0.02;

/** What a limiter knows about one key after counting. */
export interface LimiterState {
  allowed: boolean;
  remaining: number;
  msBeforeReset: number;
}

export class UsageSharing {
  private readonly limiters = new Map<string, SharedLimiter>();
  private unreported = new Map<SharedLimiter, Map<string, number>>();
  /** Reports what was counted every FLUSH_INTERVAL_MS; it does not keep the process running. */
  private readonly reporting = new PollingLoop({
    round: () => {
      this.flush();
      return Promise.resolve(FLUSH_INTERVAL_MS);
    },
    keepsProcessAlive: false,
  });

  /** `publish` is null when this gateway is alone (no transporter): nobody to tell. */
  constructor(
    private readonly publish: PublishUsage | null,
    private readonly onPublishError: (err: unknown) => void = () => {},
  ) {
    if (publish) this.reporting.start();
  }

  /** A limiter of `points` per `durationSeconds` per key, shared under `name` with the other gateways. */
  limiter(name: string, points: number, durationSeconds: number): SharedLimiter {
    const limiter = new SharedLimiter(name, points, durationSeconds, this);
    this.limiters.set(name, limiter);
    return limiter;
  }

  /** Points a limiter of this gateway counted, for the next report. */
  counted(limiter: SharedLimiter, key: string, points: number): void {
    if (!this.publish) return;
    const keys = this.unreported.get(limiter) ?? new Map<string, number>();
    this.unreported.set(limiter, keys);
    const total = (keys.get(key) ?? 0) + points;
    keys.set(key, total);
    if (total >= limiter.eagerThreshold) this.flush();
  }

  /** Sends what was counted since the last report, if anything. */
  flush(): void {
    if (!this.publish || this.unreported.size === 0) return;
    const report: UsageReport = { usage: [] };
    for (const [limiter, keys] of this.unreported) {
      for (const [key, points] of keys) report.usage.push([limiter.name, key, points]);
    }
    this.unreported = new Map();
    // A lost report only lets a client overshoot by what it carried; the request path never waits for it.
    Promise.resolve(this.publish(report)).catch(this.onPublishError);
  }

  /** Another gateway's report: what it counted counts here too. */
  async apply(report: UsageReport): Promise<void> {
    for (const [name, key, points] of report.usage) {
      const limiter = this.limiters.get(name);
      if (limiter && typeof key === "string" && Number.isInteger(points) && points > 0)
        await limiter.absorb(key, points);
    }
  }

  stop(): void {
    void this.reporting.stop();
    this.flush();
  }
}

export class SharedLimiter {
  private readonly local: RateLimiterMemory;
  /** Unreported points of one key that make the report leave at once. */
  readonly eagerThreshold: number;

  constructor(
    readonly name: string,
    readonly points: number,
    readonly durationSeconds: number,
    private readonly sharing: UsageSharing,
  ) {
    this.local = new RateLimiterMemory({ keyPrefix: name, points, duration: durationSeconds });
    this.eagerThreshold = Math.max(1, Math.floor(points * EAGER_SHARE));
  }

  /** Spends one point of `key`; `allowed` is false once the key has spent more than its points. */
  async consume(key: string): Promise<LimiterState> {
    // RateLimiterMemory rejects with the same RateLimiterRes when the points are exhausted.
    const res = await this.local.consume(key).catch((rejection: unknown) => {
      if (rejection instanceof RateLimiterRes) return rejection;
      throw rejection;
    });
    this.sharing.counted(this, key, 1);
    return this.stateOf(res);
  }

  /** Counts one point against `key` without asking whether it was allowed (a failure to remember). */
  async penalty(key: string): Promise<LimiterState> {
    const res = await this.local.penalty(key, 1);
    this.sharing.counted(this, key, 1);
    return this.stateOf(res);
  }

  /** The key's state without spending anything: blocked once every point is spent. */
  async peek(key: string): Promise<LimiterState> {
    const res = await this.local.get(key);
    if (!res) return { allowed: true, remaining: this.points, msBeforeReset: this.durationSeconds * 1000 };
    return { ...this.stateOf(res), allowed: res.consumedPoints < this.points };
  }

  /** Points another gateway counted for `key`. */
  async absorb(key: string, points: number): Promise<void> {
    await this.local.penalty(key, points);
  }

  private stateOf(res: RateLimiterRes): LimiterState {
    return {
      allowed: res.consumedPoints <= this.points,
      remaining: Math.max(0, this.points - res.consumedPoints),
      msBeforeReset: Math.max(0, res.msBeforeNext),
    };
  }
}
