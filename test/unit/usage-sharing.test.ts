import fc from "fast-check";
import type { UsageReport } from "../../shared/messaging/events";
import { UsageSharing } from "../../gateway/usage-sharing";

/** Two gateways whose reports reach each other, in memory, when `deliver()` is called. */
function twoGateways(points: number) {
  const inbox: [UsageSharing, UsageReport][] = [];
  let a: UsageSharing | null = null;
  let b: UsageSharing | null = null;
  a = new UsageSharing((report) => void inbox.push([b!, report]));
  b = new UsageSharing((report) => void inbox.push([a, report]));
  const limiters = [a.limiter("requests", points, 60), b.limiter("requests", points, 60)];
  return {
    limiters,
    async deliver() {
      for (const [to, report] of inbox.splice(0)) await to.apply(report);
    },
    stop() {
      a.stop();
      b.stop();
    },
  };
}

describe("rate-limit usage shared between gateways", () => {
  it("when a client's requests are spread over two gateways in any order, then together they accept the limit and at most the unreported share more", async () => {
    const points = 100;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 2 * points, maxLength: 3 * points }),
        async (gatewayOfRequest) => {
          const pair = twoGateways(points);
          let accepted = 0;
          for (const g of gatewayOfRequest) {
            if ((await pair.limiters[g].consume("client-1")).allowed) accepted++;
            // Reports travel between requests (the eager ones); the periodic ones are not needed here.
            await pair.deliver();
          }
          pair.stop();
          expect(accepted).toBeGreaterThanOrEqual(points);
          expect(accepted).toBeLessThanOrEqual(points * 1.1);
        },
      ),
      { numRuns: 25 },
    );
  });

  it("when reports never arrive, then each gateway counts alone (what sharing prevents)", async () => {
    const a = new UsageSharing(null);
    const b = new UsageSharing(null);
    const limiters = [a.limiter("requests", 10, 60), b.limiter("requests", 10, 60)];
    let accepted = 0;
    for (let i = 0; i < 40; i++) if ((await limiters[i % 2].consume("client-1")).allowed) accepted++;
    expect(accepted).toBe(20);
  });

  it("when a report names an unknown limiter or a bad count, then it is ignored", async () => {
    const sharing = new UsageSharing(null);
    const limiter = sharing.limiter("requests", 5, 60);
    await sharing.apply({
      usage: [
        ["other", "client-1", 5],
        ["requests", "client-1", -4],
        ["requests", "client-1", 1.5],
      ],
    });
    expect((await limiter.peek("client-1")).remaining).toBe(5);
    await sharing.apply({ usage: [["requests", "client-1", 2]] });
    expect((await limiter.peek("client-1")).remaining).toBe(3);
  });
});
