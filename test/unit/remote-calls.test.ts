/**
 * The retry rules of remote calls (shared/messaging/remote-calls.ts, shared/messaging/repeatable-calls.ts), with
 * brokers in this process over moleculer's in-memory transporter: a "frozen" replica that takes
 * requests and never answers, as one killed with SIGKILL, and a live one.
 */
import { Errors, ServiceBroker, type Context } from "moleculer";
import {
  attemptBudgetMs,
  EarlyRetryBudget,
  mayRetry,
  remoteCallsMiddleware,
} from "../../shared/messaging/remote-calls";
import {
  attemptTimeoutMs,
  isRepeatableCall,
  ORDER_ATTEMPT_TIMEOUT_MS,
  READ_ATTEMPT_TIMEOUT_MS,
  UNKEYED_ORDER_ATTEMPT_TIMEOUT_MS,
} from "../../shared/messaging/repeatable-calls";

const REQUEST_TIMEOUT_MS = 4_000;

/** A context as the middleware sees it: an action name, params, meta, options, attempts so far. */
function call(
  name: string,
  extra: { params?: object; meta?: object; attempt?: number; retries?: number } = {},
): Context {
  return {
    action: { name },
    params: extra.params ?? {},
    meta: extra.meta ?? {},
    options: { retries: extra.retries },
    _retryAttempts: extra.attempt ?? 0,
  } as unknown as Context;
}

describe("which calls are sent again", () => {
  it.each(["crm.getContact", "clients.authenticate", "orders.list", "webhooks.deliveries"])(
    "when %s (a read) is called, then it is repeatable, after a read's attempt time-out",
    (name) => {
      expect(isRepeatableCall(call(name))).toBe(true);
      expect(attemptTimeoutMs(call(name))).toBe(READ_ATTEMPT_TIMEOUT_MS);
    },
  );

  it("when an order carries an Idempotency-Key, then it is repeatable after an order's attempt time-out; with only an externalId, after a longer one", () => {
    expect(attemptTimeoutMs(call("orders.create", { meta: { idempotencyKey: "K1" } }))).toBe(ORDER_ATTEMPT_TIMEOUT_MS);
    // Repeatable, after a longer attempt: a slow order repeated would be refused as its own duplicate.
    expect(attemptTimeoutMs(call("orders.create", { params: { externalId: "E1" } }))).toBe(
      UNKEYED_ORDER_ATTEMPT_TIMEOUT_MS,
    );
    expect(isRepeatableCall(call("orders.create", { params: { externalId: "E1" } }))).toBe(true);
  });

  it.each([
    ["an order with neither Idempotency-Key nor externalId", call("orders.create", { params: { items: [] } })],
    ["another write", call("crm.createContact")],
    ["an order's status change", call("orders.validate")],
    ["an action no list names", call("somewhere.new")],
  ])("when %s is called, then it is never sent again", (_what, ctx) => {
    expect(isRepeatableCall(ctx)).toBe(false);
    expect(attemptTimeoutMs(ctx)).toBeNull();
  });
});

describe("how long an attempt may take", () => {
  it("when a repeatable call has retries left, then its attempt is short", () => {
    expect(attemptBudgetMs(call("crm.getContact"), 10_000, 2)).toEqual({
      ms: READ_ATTEMPT_TIMEOUT_MS,
      retryAfter: true,
    });
    expect(attemptBudgetMs(call("crm.getContact", { attempt: 1 }), 8_000, 2)).toEqual({
      ms: READ_ATTEMPT_TIMEOUT_MS,
      retryAfter: true,
    });
  });

  it("when it is the last attempt, then it gets all the time left, so a slow answer still arrives", () => {
    expect(attemptBudgetMs(call("crm.getContact", { attempt: 2 }), 7_700, 2)).toEqual({ ms: 7_700, retryAfter: false });
    expect(attemptBudgetMs(call("crm.getContact", { retries: 0 }), 7_700, 2)).toEqual({ ms: 7_700, retryAfter: false });
  });

  it("when less time is left than an attempt, then the attempt ends with the call's time-out", () => {
    expect(attemptBudgetMs(call("crm.getContact"), 300, 2)).toEqual({ ms: 300, retryAfter: false });
  });

  it("when the call is not repeatable, then its one attempt gets the whole time-out; an order with only an externalId, half of it", () => {
    expect(attemptBudgetMs(call("crm.createContact"), 10_000, 2)).toEqual({ ms: 10_000, retryAfter: false });
    expect(attemptBudgetMs(call("orders.create", { params: { externalId: "E1" } }), 10_000, 2)).toEqual({
      ms: UNKEYED_ORDER_ATTEMPT_TIMEOUT_MS,
      retryAfter: true,
    });
  });
});

describe("the early re-send budget", () => {
  it("when calls are cut short one after another, then the reserve runs out and refills at one per ten calls", () => {
    const budget = new EarlyRetryBudget(10, 3);
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([true, true, true, false]);
    for (let i = 0; i < 9; i++) budget.called();
    expect(budget.take()).toBe(false);
    budget.called();
    expect(budget.take()).toBe(true);
  });

  it("when many calls go well, then the reserve does not grow past its size", () => {
    const budget = new EarlyRetryBudget(10, 2);
    for (let i = 0; i < 1_000; i++) budget.called();
    expect([budget.take(), budget.take(), budget.take()]).toEqual([true, true, false]);
  });
});

describe("mayRetry", () => {
  it("when an error was not marked by a remote call, then it is not retried", () => {
    expect(mayRetry(new Errors.RequestTimeoutError({ action: "crm.getContact", nodeID: "x" }))).toBe(false);
    expect(mayRetry(new Errors.ValidationError("bad", "VALIDATION_ERROR", []))).toBe(false);
    expect(mayRetry(new Error("plain"))).toBe(false);
  });
});

describe("remote calls to a replica that never answers", () => {
  const namespace = `remote-calls-${process.pid}`;
  const received = { frozen: 0, live: 0 };
  const brokerOf = (nodeID: string) =>
    new ServiceBroker({
      namespace,
      nodeID,
      transporter: "Fake",
      logger: false,
      requestTimeout: REQUEST_TIMEOUT_MS,
      retryPolicy: {
        enabled: true,
        retries: 2,
        delay: 50,
        maxDelay: 100,
        factor: 2,
        check: mayRetry,
      },
      registry: { strategy: "RoundRobin" },
      middlewares: [remoteCallsMiddleware()],
    });
  const caller = brokerOf("caller");
  const replica = (nodeID: "frozen" | "live") => {
    const b = brokerOf(nodeID);
    const answer = () => {
      received[nodeID]++;
      return nodeID === "frozen" ? new Promise(() => undefined) : Promise.resolve(nodeID);
    };
    b.createService({ name: "crm", actions: { getContact: answer, createContact: answer } });
    return b;
  };
  const replicas = [replica("frozen"), replica("live")];

  beforeAll(async () => {
    await Promise.all([caller, ...replicas].map((b) => b.start()));
    await caller.waitForServices(["crm"]);
    while (caller.registry.getActionEndpoints("crm.getContact")?.count() !== 2)
      await new Promise((r) => setTimeout(r, 20));
  });
  afterAll(async () => {
    await Promise.all([caller, ...replicas].map((b) => b.stop()));
  });
  beforeEach(() => {
    received.frozen = 0;
    received.live = 0;
  });

  it("when reads reach the frozen replica, then they are answered by the live one, before the request time-out", async () => {
    // One at a time: the balancer alternates, so a retry goes to the other replica, as NATS
    // sends it to the replica left in the queue group once a killed one has gone.
    for (let i = 0; i < 3; i++) {
      const startedAt = Date.now();
      expect(await caller.call("crm.getContact")).toBe("live");
      expect(Date.now() - startedAt).toBeLessThan(REQUEST_TIMEOUT_MS);
    }
    expect(received.frozen).toBeGreaterThan(0);
  });

  it("when a write reaches the frozen replica, then it is not sent again and fails at its time-out", async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 2 }, () => caller.call("crm.createContact", {}, { timeout: 1_500 })),
    );
    expect(received.frozen + received.live).toBe(2);
    const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(failed.map((o): unknown => o.reason)).toEqual([expect.any(Errors.RequestTimeoutError)]);
  });

  it("when every replica is frozen, then a read ends with a time-out error by its time-out, not after one per attempt", async () => {
    const live = replicas[1];
    await live.destroyService("crm");
    try {
      while (caller.registry.getActionEndpoints("crm.getContact")?.count() !== 1)
        await new Promise((r) => setTimeout(r, 20));
      const timeout = 2_500;
      const startedAt = Date.now();
      await expect(caller.call("crm.getContact", {}, { timeout })).rejects.toBeInstanceOf(Errors.RequestTimeoutError);
      // Two short attempts, then the last one with what was left: ended by the call's own time-out.
      expect(received.frozen).toBe(3);
      expect(Date.now() - startedAt).toBeLessThan(timeout + 500);
    } finally {
      live.createService({ name: "crm", actions: { getContact: () => "live", createContact: () => "live" } });
    }
  });
});

describe("a local action whose remote call failed", () => {
  // With disableBalancer (as with NATS), a call to an action this node runs still goes through
  // the transporter, and moleculer's Retry skipped it as a request served here: the read was not
  // sent again, and the gateway's `rest` met the failure still marked, ran itself again on its
  // consumed request and answered 404.
  let runs = 0;
  let readsSent = 0;
  const solo = new ServiceBroker({
    namespace: `remote-calls-solo-${process.pid}`,
    nodeID: "solo",
    transporter: "Fake",
    disableBalancer: true,
    logger: false,
    requestTimeout: REQUEST_TIMEOUT_MS,
    retryPolicy: {
      enabled: true,
      retries: 2,
      delay: 50,
      maxDelay: 100,
      factor: 2,
      check: mayRetry,
    },
    // The first wraps innermost: it counts each attempt sent to the transporter.
    middlewares: [
      { remoteAction: (next: (ctx: Context) => Promise<unknown>) => (ctx: Context) => (readsSent++, next(ctx)) },
      remoteCallsMiddleware(),
    ],
  });
  solo.createService({ name: "crm", actions: { getContact: () => new Promise(() => undefined) } });
  const front = solo.createService({
    name: "front",
    actions: {
      // Private, as moleculer-web's `rest`: its Retry runs it again here, not through the transporter.
      run: {
        visibility: "private",
        handler(ctx: Context) {
          runs++;
          return ctx.call("crm.getContact");
        },
      },
    },
  });

  beforeAll(() => solo.start());
  afterAll(() => solo.stop());

  it("when the read it made on this node times out, then the read is sent again but the action is not run again, and its caller gets the time-out", async () => {
    // As moleculer-web calls `rest`: the service's own action, through the local middlewares.
    await expect(front.actions.run({})).rejects.toBeInstanceOf(Errors.RequestTimeoutError);
    expect(runs).toBe(1);
    // The read itself was sent again, as a read to another node is (NATS could have handed it
    // to a replica elsewhere): two short attempts, then the last one with what was left.
    expect(readsSent).toBe(3);
  });
});
