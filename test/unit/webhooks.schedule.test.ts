import { leaseMsFor, nextState } from "../../services/webhooks/webhooks.dispatcher";
import { MAX_JITTER, retryDelayMs } from "../../services/webhooks/webhooks.schedule";
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
