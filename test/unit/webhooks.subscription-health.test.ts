import type { Knex } from "knex";
import {
  SubscriptionHealth,
  SUCCESS_NOTED_FOR_MS,
  summarize,
  verdictOf,
  type NotedAttempt,
  type Verdict,
} from "../../services/webhooks/webhooks.subscription-health";
import { retryAfterMs } from "../../services/webhooks/webhooks.schedule";
import { nextState } from "../../services/webhooks/webhooks.dispatcher";

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

  it("when a batch of attempts is summarised, then each subscription gets its latest success, its latest failure, and since when it fails", () => {
    const at = (second: number) => new Date(Date.UTC(2026, 4, 1, 0, 0, second));
    const noted = (
      subscription: number,
      second: number,
      verdict: Verdict,
      statusCode: number | null = null,
    ): NotedAttempt => ({
      delivery: { subscription_id: subscription, endpoint: "https://example.com" },
      verdict,
      attempt: { attemptedAt: at(second), statusCode, error: statusCode === null ? "timeout" : null, durationMs: 5 },
    });
    const healthy: Verdict = { kind: "healthy" };
    const failing: Verdict = { kind: "failing" };
    // Out of order on purpose: outcomes arrive as attempts end, not as they started.
    const notes = summarize([
      noted(1, 3, failing, 500),
      noted(1, 1, failing, 502),
      noted(1, 2, healthy, 200),
      noted(1, 4, failing),
      noted(2, 1, failing, 500),
      noted(2, 2, healthy, 200),
      noted(3, 1, failing, 503),
      noted(3, 2, failing, 500),
    ]);
    expect(notes).toEqual([
      {
        subscriptionId: 1,
        lastSuccessAt: at(2),
        lastFailure: { at: at(4), statusCode: null, error: "timeout" },
        failingFrom: at(3),
      },
      {
        subscriptionId: 2,
        lastSuccessAt: at(2),
        lastFailure: { at: at(1), statusCode: 500, error: null },
        failingFrom: null,
      },
      {
        subscriptionId: 3,
        lastSuccessAt: null,
        lastFailure: { at: at(2), statusCode: 500, error: null },
        failingFrom: at(1),
      },
    ]);
  });
});

describe("noting health figures under load", () => {
  /** A stand-in for the database: records the subscriptions each health statement notes. */
  function recordingDb() {
    const noted: number[][] = [];
    const db = {
      raw: async (_sql: string, bindings: unknown[]) => {
        const input = JSON.parse(bindings[0] as string) as { id: number }[];
        noted.push(input.map((i) => i.id));
        return { rows: input.map((i) => ({ id: i.id, status: "active", failing_too_long: false })) };
      },
    };
    return {
      noted,
      health: new SubscriptionHealth({ db: db as unknown as Knex, retryAfterMaxMs: HOUR_MS, disableAfterMs: HOUR_MS }),
    };
  }
  const attempt = (subscriptionId: number, verdict: Verdict): NotedAttempt => ({
    delivery: { subscription_id: subscriptionId, endpoint: "http://hooks.example.com" },
    verdict,
    attempt: {
      attemptedAt: new Date(),
      statusCode: verdict.kind === "healthy" ? 200 : 500,
      error: null,
      durationMs: 3,
    },
  });

  it("when a subscription keeps succeeding, then its success is noted once a second, not once per batch; a failure is noted at once and makes the next success noted too", async () => {
    jest.useFakeTimers({ now: Date.parse("2026-05-01T00:00:00Z"), doNotFake: ["nextTick", "setImmediate"] });
    try {
      const { noted, health } = recordingDb();
      await health.afterAttempts([attempt(1, { kind: "healthy" }), attempt(2, { kind: "healthy" })]);
      await health.afterAttempts([attempt(1, { kind: "healthy" }), attempt(2, { kind: "failing" })]);
      await health.afterAttempts([attempt(1, { kind: "healthy" }), attempt(2, { kind: "healthy" })]);
      expect(noted).toEqual([[1, 2], [2], [2]]);

      jest.setSystemTime(Date.now() + SUCCESS_NOTED_FOR_MS + 1);
      await health.afterAttempts([attempt(1, { kind: "healthy" }), attempt(2, { kind: "healthy" })]);
      expect(noted.at(-1)).toEqual([1, 2]);
    } finally {
      jest.useRealTimers();
    }
  });
});
