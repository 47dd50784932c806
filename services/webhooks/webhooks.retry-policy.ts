/**
 * What an attempt's outcome means (docs/webhooks.md, "Retries" and "Endpoint health"), decided
 * here and nowhere else; the dispatcher, the outcome recorder and subscription health act on it.
 *
 * - 2xx: delivered; the subscription is healthy.
 * - A refused target (the URL now leads to a forbidden address): refused, never retried.
 * - `410 Gone`: the receiver says the URL is no more; the delivery fails and the subscription is
 *   disabled at once.
 * - `429` or `503` with a readable `Retry-After`: its endpoint (the URL's origin) is paused until
 *   then, capped at WEBHOOK_RETRY_AFTER_MAX, for every replica (`endpoint_pauses`); the delivery
 *   waits as long without spending a retry, even past its last scheduled one.
 * - Any other failure (an error status, a time-out, no connection) is retried after
 *   WEBHOOK_RETRY_SCHEDULE's next wait, stretched by a random jitter of up to 20% so that the
 *   retries of many deliveries that failed together do not come back together; once the schedule
 *   is spent the delivery fails for good. A subscription whose every attempt failed for
 *   WEBHOOK_DISABLE_AFTER is disabled.
 */
import type { DeliveryStatus } from "./webhooks.params";
import type { AttemptOutcome } from "./webhooks.sender";

/** What one outcome says about its subscription and endpoint. */
export type Verdict =
  | { kind: "healthy" }
  /** 410 Gone: disable now. */
  | { kind: "gone" }
  /** 429/503 with a readable Retry-After: wait `waitMs`, no retry spent. */
  | { kind: "throttled"; waitMs: number }
  | { kind: "failing" };

/** The delivery's state after an attempt. */
export interface DeliveryUpdate {
  status: DeliveryStatus;
  /** Milliseconds from now until the next attempt; null when none is scheduled. */
  retryInMs: number | null;
  /** False when the receiver asked to wait (Retry-After): the attempt is kept but spends no retry. */
  spendsRetry?: boolean;
}

/** The settings the policy reads (WEBHOOK_RETRY_SCHEDULE, WEBHOOK_RETRY_AFTER_MAX). */
export interface RetrySettings {
  /** Seconds to wait before each retry; its length is the number of retries. */
  scheduleSeconds: readonly number[];
  retryAfterMaxMs: number;
}

/** Why a subscription is disabled. */
export type DisabledReason = "gone" | "failing";

export const MAX_JITTER = 0.2;

/** The statuses whose Retry-After is honoured (RFC 9110 §10.2.3, RFC 6585 §4). */
const THROTTLING_STATUSES = new Set([429, 503]);

/** An attempt's verdict and the delivery's next state: all the dispatcher asks. */
export function judge(
  outcome: AttemptOutcome,
  attemptsMade: number,
  settings: RetrySettings,
): { verdict: Verdict; next: DeliveryUpdate } {
  const verdict = verdictOf(outcome, settings.retryAfterMaxMs);
  return { verdict, next: nextState(outcome, attemptsMade, settings.scheduleSeconds, verdict) };
}

export function verdictOf(outcome: AttemptOutcome, retryAfterMaxMs: number): Verdict {
  if (outcome.kind === "delivered") return { kind: "healthy" };
  if (outcome.kind !== "rejected") return { kind: "failing" };
  if (outcome.statusCode === 410) return { kind: "gone" };
  const waitMs = THROTTLING_STATUSES.has(outcome.statusCode) ? retryAfterMs(outcome.retryAfter, retryAfterMaxMs) : null;
  return waitMs === null ? { kind: "failing" } : { kind: "throttled", waitMs };
}

/** The delivery's next state after an attempt that ended this way. */
export function nextState(
  outcome: AttemptOutcome,
  attemptsMade: number,
  schedule: readonly number[],
  verdict?: Verdict,
): DeliveryUpdate {
  if (verdict?.kind === "throttled") return { status: "pending", retryInMs: verdict.waitMs, spendsRetry: false };
  if (verdict?.kind === "gone") return { status: "failed", retryInMs: null };
  switch (outcome.kind) {
    case "delivered":
      return { status: "succeeded", retryInMs: null };
    case "refused":
      return { status: "refused", retryInMs: null };
    default: {
      const retryInMs = retryDelayMs(attemptsMade, schedule);
      return retryInMs === null ? { status: "failed", retryInMs: null } : { status: "pending", retryInMs };
    }
  }
}

/** Whether a subscription is disabled now: it answered 410 Gone, or has failed for WEBHOOK_DISABLE_AFTER. */
export function disablingReason(subscription: { gone: boolean; failingTooLong: boolean }): DisabledReason | null {
  if (subscription.gone) return "gone";
  return subscription.failingTooLong ? "failing" : null;
}

/** Milliseconds to wait after the `attemptsMade`-th failed attempt, or null when none is left. */
export function retryDelayMs(
  attemptsMade: number,
  scheduleSeconds: readonly number[],
  random: () => number = Math.random,
): number | null {
  const seconds = scheduleSeconds[attemptsMade - 1];
  if (seconds === undefined) return null;
  return Math.round(seconds * 1000 * (1 + MAX_JITTER * random()));
}

/**
 * Milliseconds a `Retry-After` header asks to wait (RFC 9110: delay-seconds or an HTTP date),
 * capped at `maxMs`; null when there is none or it cannot be read.
 */
export function retryAfterMs(header: unknown, maxMs: number, now: number = Date.now()): number | null {
  if (typeof header !== "string" || header.trim() === "") return null;
  const text = header.trim();
  // Every HTTP-date form starts with the day's name; Date.parse alone would take "-5" or "1.5" as dates.
  const asked = /^\d+$/.test(text)
    ? Number(text) * 1000
    : /^[A-Za-z]{3}/.test(text)
      ? Date.parse(text) - now
      : Number.NaN;
  if (!Number.isFinite(asked)) return null;
  return Math.min(Math.max(0, asked), maxMs);
}
