/**
 * The arithmetic of a subscription's rate limit (webhooks.rate-limiter.ts; the admission itself
 * runs in PostgreSQL and is tested across two replicas in test/integration/webhooks.rate-limit.test.ts):
 * the burst keeps one second within 5 % of the limit, and deliveries put back come due one
 * interval apart from when the next send is allowed.
 */
import { burstOf, releaseDelaysMs } from "../../services/webhooks/webhooks.rate-limiter";

describe("rate limit arithmetic", () => {
  it.each([1, 5, 19, 20, 50, 100, 999, 1000])(
    "when the limit is %i a second, then a second holds at most 5 %% more as admitted (a burst of at least one)",
    (rate) => {
      expect(burstOf(rate)).toBeGreaterThanOrEqual(1);
      expect(rate + burstOf(rate) - 1).toBeLessThanOrEqual(Math.max(rate, Math.floor(rate * 1.05)));
    },
  );

  it("when deliveries are put back after a grant, then each comes due one interval after the other, from when the next send is allowed within the burst", () => {
    // 20 a second: one every 50 ms, a burst of 2 (one send may come 50 ms early).
    expect(releaseDelaysMs(100, 20, 4)).toEqual([50, 100, 150, 200]);
    // 1 a second, no burst: the first when the next send is due.
    expect(releaseDelaysMs(700, 1, 2)).toEqual([700, 1700]);
    // Never in the past.
    expect(releaseDelaysMs(-30, 10, 1)).toEqual([1]);
  });
});
