/**
 * What an outbox relay says about its failures (shared/messaging/outbox-relay-health.ts): its log
 * while NATS is away, how long it has failed, and the readiness checks drawn from it.
 */
import { eventFlowChecks, RelayHealth } from "../../shared/messaging/outbox-relay-health";

const INTERVAL_MS = 10_000;

function healthWithClock() {
  const lines: string[] = [];
  let now = 1_000_000;
  const health = new RelayHealth(
    (line) => lines.push(line),
    INTERVAL_MS,
    () => now,
  );
  return {
    health,
    lines,
    advance: (ms: number) => (now += ms),
  };
}

const unreachable = (n: number) => ({ error: new Error(`no responders ${n}`), failedPublishes: 100 });

describe("outbox relay health", () => {
  it("when every round fails for 25 s, then the first failure is logged at once and the rest summed up every 10 s, no more", () => {
    const { health, lines, advance } = healthWithClock();
    for (let round = 0; round < 50; round++) {
      health.roundFailed(unreachable(round));
      advance(500);
    }
    expect(lines).toEqual([
      "publishing 100 event(s) failed, will retry: no responders 0",
      "2000 more failure(s) in 10 s (first: no responders 1; last: no responders 20); failing for 10 s",
      "2000 more failure(s) in 10 s (first: no responders 21; last: no responders 40); failing for 20 s",
    ]);
    expect(health.consecutiveFailedRounds).toBe(50);
    expect(health.failingForMs()).toBe(25_000);
  });

  it("when publishing works again, then what was held back is summed up once the interval is over, saying events flow", () => {
    const { health, lines, advance } = healthWithClock();
    health.roundFailed(unreachable(0));
    advance(1_000);
    health.roundFailed(unreachable(1));
    advance(1_000);
    health.roundSucceeded();
    expect(health.failingForMs()).toBe(0);
    expect(health.consecutiveFailedRounds).toBe(0);
    expect(lines).toHaveLength(1);
    advance(INTERVAL_MS);
    health.roundSucceeded();
    health.roundSucceeded();
    expect(lines).toEqual([
      "publishing 100 event(s) failed, will retry: no responders 0",
      "100 more failure(s) in 11 s (no responders 1); events flow again",
    ]);
  });

  it("when one stream's events keep failing while the others are published, then events flow for the probes, the relay keeps backing off, and the log stays at one line per interval", () => {
    const { health, lines, advance } = healthWithClock();
    for (let round = 0; round < 100; round++) {
      health.roundSucceeded({ error: new Error("503"), failedPublishes: 40 });
      advance(200);
    }
    expect(health.failingForMs()).toBe(0);
    expect(health.consecutiveFailedRounds).toBe(100);
    expect(lines.length).toBeLessThanOrEqual(3);
    health.roundSucceeded();
    expect(health.consecutiveFailedRounds).toBe(0);
  });

  it("when readiness asks, then publishing and the outbox fail only from the threshold on, and an unknown age is said so", () => {
    expect(eventFlowChecks(29_000, 29, 30_000)).toEqual({ publishing: "ok", outbox: "ok" });
    expect(eventFlowChecks(42_400, 75.2, 30_000)).toEqual({
      publishing: "failing for 42 s",
      outbox: "oldest unpublished event 75 s old",
    });
    expect(eventFlowChecks(0, null, 30_000)).toEqual({ publishing: "ok", outbox: "unknown" });
  });
});
