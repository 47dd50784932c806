/**
 * shared/polling-loop.ts: the start/stop loop the outbox relay, the periodic jobs, the webhooks
 * dispatcher and the gateway's usage reports run on, and JobLoop, the leased jobs' (the webhooks
 * recoverer, the order import worker). Fake timers: a pause ends
 * only when the test moves the clock or wakes the loop.
 */
import { AT_ONCE, JobLoop, PollingLoop } from "../../shared/polling-loop";

/** Lets every promise that can settle now settle (the loop awaits between its steps). */
const settle = () => jest.advanceTimersByTimeAsync(0);

/** A loop whose rounds are counted and each resolves to what `next` says. */
function countingLoop(next: () => number | typeof AT_ONCE, keepsProcessAlive?: boolean) {
  let rounds = 0;
  const loop = new PollingLoop({
    round: async () => {
      rounds += 1;
      return next();
    },
    keepsProcessAlive,
  });
  return { loop, rounds: () => rounds };
}

describe("PollingLoop", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("when started, then the first round runs at once and the next ones after the pause each round asked for", async () => {
    const { loop, rounds } = countingLoop(() => 1_000);
    loop.start();
    loop.start();
    await settle();
    expect(rounds()).toBe(1);
    await jest.advanceTimersByTimeAsync(999);
    expect(rounds()).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(rounds()).toBe(2);
    await loop.stop();
  });

  it("when woken during a pause, then the next round runs at once", async () => {
    const { loop, rounds } = countingLoop(() => 60_000);
    loop.start();
    await settle();
    loop.wake();
    await settle();
    expect(rounds()).toBe(2);
    await loop.stop();
  });

  it("when woken during a round, then the pause after it ends at once", async () => {
    let rounds = 0;
    const loop: PollingLoop = new PollingLoop({
      round: async () => {
        rounds += 1;
        if (rounds === 1) loop.wake();
        return 60_000;
      },
    });
    loop.start();
    await settle();
    expect(rounds).toBe(2);
    await loop.stop();
  });

  it("when a round says more work is waiting, then the next one runs without a pause", async () => {
    let left = 3;
    const { loop, rounds } = countingLoop(() => (--left > 0 ? AT_ONCE : 60_000));
    loop.start();
    await settle();
    expect(rounds()).toBe(3);
    await loop.stop();
  });

  it("when stopped during a round, then it resolves once that round ends, no round follows, and the round saw it stopping", async () => {
    let finishRound: () => void = () => undefined;
    const seenAfterStop: boolean[] = [];
    let rounds = 0;
    const loop: PollingLoop = new PollingLoop({
      round: async () => {
        rounds += 1;
        await new Promise<void>((resolve) => (finishRound = resolve));
        seenAfterStop.push(loop.running);
        return AT_ONCE;
      },
    });
    loop.start();
    expect(loop.running).toBe(true);
    await settle();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    finishRound();
    await stopping;
    expect(seenAfterStop).toEqual([false]);
    expect(rounds).toBe(1);
    expect(loop.running).toBe(false);
  });

  it("when stopped during a pause, then it resolves without waiting for the pause to end", async () => {
    const { loop, rounds } = countingLoop(() => 60_000);
    loop.start();
    await settle();
    let stopped = false;
    void loop.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(true);
    expect(rounds()).toBe(1);
  });

  it("when it must not keep the process running, then its pauses do not; by default they do", async () => {
    const timers = jest.spyOn(global, "setTimeout");
    try {
      for (const keepsProcessAlive of [false, undefined]) {
        timers.mockClear();
        const { loop } = countingLoop(() => 60_000, keepsProcessAlive);
        loop.start();
        await settle();
        const pause = timers.mock.results.find((r) => r.type === "return")?.value as NodeJS.Timeout;
        expect(pause.hasRef()).toBe(keepsProcessAlive !== false);
        await loop.stop();
      }
    } finally {
      timers.mockRestore();
    }
  });
});

/** A JobLoop over a queue of job names; a name "fail" makes its claim throw. */
class QueueLoop extends JobLoop<string> {
  readonly worked: string[] = [];
  readonly warnings: string[];
  isReady = true;

  constructor(private readonly queue: string[]) {
    const warnings: string[] = [];
    super({
      name: "Test job",
      logger: { warn: (m) => warnings.push(m) },
      intervalMs: 1_000,
      ready: () => this.isReady,
    });
    this.warnings = warnings;
  }

  protected claim(): Promise<string | undefined> {
    const next = this.queue.shift();
    return next === "fail" ? Promise.reject(new Error("database down")) : Promise.resolve(next);
  }

  protected work(job: string): Promise<void> {
    this.worked.push(job);
    return Promise.resolve();
  }
}

describe("JobLoop", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("when jobs are waiting, then it works on them one after the other at once, and pauses once none is left", async () => {
    const queue = ["a", "b"];
    const jobs = new QueueLoop(queue);
    jobs.start();
    await settle();
    expect(jobs.worked).toEqual(["a", "b"]);
    queue.push("c");
    await jest.advanceTimersByTimeAsync(999);
    expect(jobs.worked).toEqual(["a", "b"]);
    jobs.wake();
    await settle();
    expect(jobs.worked).toEqual(["a", "b", "c"]);
    await jobs.stop();
    expect(jobs.running).toBe(false);
  });

  it("when a claim fails, then it says so with the job's name and tries again after the interval", async () => {
    const jobs = new QueueLoop(["fail", "a"]);
    jobs.start();
    await settle();
    expect(jobs.warnings).toEqual(["Test job: will try again: database down"]);
    expect(jobs.worked).toEqual([]);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(jobs.worked).toEqual(["a"]);
    await jobs.stop();
  });

  it("when the process is not ready, then it claims nothing until it is", async () => {
    const jobs = new QueueLoop(["a"]);
    jobs.isReady = false;
    jobs.start();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(jobs.worked).toEqual([]);
    jobs.isReady = true;
    await jest.advanceTimersByTimeAsync(250);
    expect(jobs.worked).toEqual(["a"]);
    await jobs.stop();
  });
});
