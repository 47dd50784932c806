import type { Knex } from "knex";
import {
  SubscriptionHealth,
  SUCCESS_NOTED_FOR_MS,
  summarize,
  type NotedAttempt,
} from "../../services/webhooks/webhooks.subscription-health";
import type { Verdict } from "../../services/webhooks/webhooks.retry-policy";

const HOUR_MS = 3_600_000;

describe("endpoint health verdicts", () => {
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
      raw: async (sql: string, bindings: unknown[]) => {
        // What a success note reads first (webhooks.operational-events.ts): none of them was failing.
        if (!sql.includes("jsonb_to_recordset")) return { rows: [] };
        const input = JSON.parse(bindings[0] as string) as { id: number }[];
        noted.push(input.map((i) => i.id));
        return { rows: input.map((i) => ({ id: i.id, status: "active", failing_too_long: false })) };
      },
      transaction: <T>(work: (trx: unknown) => Promise<T>) => work(db),
    };
    return {
      noted,
      health: new SubscriptionHealth({ db: db as unknown as Knex, disableAfterMs: HOUR_MS, recoveredAfterMs: 5_000 }),
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

  it("when a subscription keeps succeeding, then its success is noted once per SUCCESS_NOTED_FOR_MS (10 s), not once per batch; a failure is noted at once and makes the next success noted too", async () => {
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
