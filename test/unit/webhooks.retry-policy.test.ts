import { leaseMsFor } from "../../services/webhooks/webhooks.dispatcher";
import {
  disablingReason,
  judge,
  MAX_JITTER,
  nextState,
  retryAfterMs,
  retryDelayMs,
  verdictOf,
} from "../../services/webhooks/webhooks.retry-policy";
import { loadConfig } from "../../shared/config/config";

describe("webhook retry schedule", () => {
  const schedule = [5, 30, 120];

  it("when an attempt fails, then the next waits the scheduled seconds plus at most 20% jitter", () => {
    expect(retryDelayMs(1, schedule, () => 0)).toBe(5_000);
    expect(retryDelayMs(2, schedule, () => 0.999)).toBeLessThanOrEqual(30_000 * (1 + MAX_JITTER));
    expect(retryDelayMs(3, schedule, () => 0.5)).toBe(132_000);
  });

  it("when every retry was used, then no further attempt is scheduled and the delivery fails", () => {
    expect(retryDelayMs(4, schedule)).toBeNull();
    expect(nextState({ kind: "rejected", statusCode: 500, durationMs: 3 }, 4, schedule)).toEqual({
      status: "failed",
      retryInMs: null,
    });
    expect(nextState({ kind: "error", error: "timeout", durationMs: 3 }, 1, schedule)).toMatchObject({
      status: "pending",
    });
  });

  it("when the receiver answers 2xx or the target is refused, then nothing is retried", () => {
    expect(nextState({ kind: "delivered", statusCode: 204, durationMs: 1 }, 1, schedule)).toEqual({
      status: "succeeded",
      retryInMs: null,
    });
    expect(nextState({ kind: "refused", error: "private", durationMs: 1 }, 1, schedule)).toEqual({
      status: "refused",
      retryInMs: null,
    });
  });

  it("when the default schedule is used, then retries span about a day", () => {
    const total = loadConfig({}).webhooks.retryScheduleSeconds.reduce((a, b) => a + b, 0);
    expect(total / 3600).toBeGreaterThan(20);
    expect(total / 3600).toBeLessThan(30);
  });

  it("when an attempt is claimed, then its lease outlasts its time-out", () => {
    expect(leaseMsFor(10_000)).toBeGreaterThan(10_000);
  });
});

const HOUR_MS = 3_600_000;
const rejected = (statusCode: number, retryAfter?: string) => ({
  kind: "rejected" as const,
  statusCode,
  durationMs: 5,
  ...(retryAfter ? { retryAfter } : {}),
});

describe("endpoint health verdicts", () => {
  it("when Retry-After is seconds or an HTTP date, then the wait is read and capped; anything else is no wait", () => {
    const now = Date.parse("2026-05-01T00:00:00Z");
    expect(retryAfterMs("120", HOUR_MS, now)).toBe(120_000);
    expect(retryAfterMs("Fri, 01 May 2026 00:00:30 GMT", HOUR_MS, now)).toBe(30_000);
    expect(retryAfterMs("86400", HOUR_MS, now)).toBe(HOUR_MS);
    expect(retryAfterMs("Thu, 30 Apr 2026 00:00:00 GMT", HOUR_MS, now)).toBe(0);
    for (const bad of [undefined, "", "soon", "-5", "1.5"]) expect(retryAfterMs(bad, HOUR_MS, now)).toBeNull();
  });

  it("when the receiver answers, then 410 is gone, 429/503 with Retry-After are throttled, the rest failing, 2xx healthy", () => {
    expect(verdictOf({ kind: "delivered", statusCode: 204, durationMs: 1 }, HOUR_MS)).toEqual({ kind: "healthy" });
    expect(verdictOf(rejected(410), HOUR_MS)).toEqual({ kind: "gone" });
    expect(verdictOf(rejected(429, "7"), HOUR_MS)).toEqual({ kind: "throttled", waitMs: 7_000 });
    expect(verdictOf(rejected(503, "7"), HOUR_MS)).toEqual({ kind: "throttled", waitMs: 7_000 });
    expect(verdictOf(rejected(429), HOUR_MS)).toEqual({ kind: "failing" });
    expect(verdictOf(rejected(500, "7"), HOUR_MS)).toEqual({ kind: "failing" });
    expect(verdictOf({ kind: "timeout", error: "slow", durationMs: 1 }, HOUR_MS)).toEqual({ kind: "failing" });
  });

  it("when throttled, then the delivery waits as asked without spending a retry, even past its last scheduled retry; gone fails it", () => {
    expect(nextState(rejected(429, "7"), 3, [1, 1], { kind: "throttled", waitMs: 7_000 })).toEqual({
      status: "pending",
      retryInMs: 7_000,
      spendsRetry: false,
    });
    expect(nextState(rejected(410), 1, [1, 1], { kind: "gone" })).toEqual({ status: "failed", retryInMs: null });
    expect(nextState(rejected(500), 3, [1, 1], { kind: "failing" })).toEqual({ status: "failed", retryInMs: null });
  });
});

describe("what an outcome means, decided once", () => {
  it("when the dispatcher asks about an attempt, then it gets the verdict and the delivery's next state together", () => {
    const settings = { scheduleSeconds: [1], retryAfterMaxMs: HOUR_MS };
    expect(judge(rejected(503, "7"), 5, settings)).toEqual({
      verdict: { kind: "throttled", waitMs: 7_000 },
      next: { status: "pending", retryInMs: 7_000, spendsRetry: false },
    });
    expect(judge(rejected(410), 1, settings)).toEqual({
      verdict: { kind: "gone" },
      next: { status: "failed", retryInMs: null },
    });
    expect(judge({ kind: "delivered", statusCode: 200, durationMs: 1 }, 1, settings)).toEqual({
      verdict: { kind: "healthy" },
      next: { status: "succeeded", retryInMs: null },
    });
  });

  it("when a subscription answered 410 or has failed for too long, then it is disabled, saying which; otherwise not", () => {
    expect(disablingReason({ gone: true, failingTooLong: true })).toBe("gone");
    expect(disablingReason({ gone: true, failingTooLong: false })).toBe("gone");
    expect(disablingReason({ gone: false, failingTooLong: true })).toBe("failing");
    expect(disablingReason({ gone: false, failingTooLong: false })).toBeNull();
  });
});
