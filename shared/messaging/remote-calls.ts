/**
 * Every remote action call ends, and its end is final, by its time-out at the latest.
 *
 * moleculer 0.15 times a remote call out in its Timeout middleware, which sits outside the
 * context tracker: the caller stopped waiting, but the request stayed in transit's pending list
 * and its context stayed tracked until an answer that a dead node never sends. Each time-out
 * leaked one, and stopping the process then waited its whole shutdown time for them. Here, the
 * innermost wrapper of a remote call (user middlewares wrap first) settles the call itself at the
 * time-out and drops the pending request, so the tracker lets the context go.
 *
 * A call that is safe to send again (shared/messaging/repeatable-calls.ts) is given a short time per
 * attempt, and its last attempt what is left of its time-out: a request held by a replica that
 * was killed is sent to the other one after 1–2 s instead of 10 s, and the caller never waits
 * longer than the call's time-out in all (moleculer's Retry gives every attempt the whole
 * time-out again). A read that is merely slow still gets its answer, on the last attempt; and
 * when most calls to a service are slow, few are sent again (EarlyRetryBudget).
 *
 * It also decides which failures the broker's retry policy may repeat (moleculer.config.ts):
 * only a time-out, a rejection (the node left) or a "not here" from a stopping node, of a call
 * that is safe to send again, while time is left. Its `check` sees only the error, so the error
 * is marked here.
 */
import { Errors, type Context, type Middleware, type ServiceBroker } from "moleculer";
import { attemptTimeoutMs } from "./repeatable-calls";

/** Errors the retry policy may repeat, used up by its first check. */
const retryMarks = new WeakSet<object>();

/**
 * The node did not answer in time, left, or no longer runs the action: a replica stopping
 * (SIGTERM) still gets requests from its queue group while its services stop.
 */
const RETRIED = [
  Errors.RequestTimeoutError,
  Errors.RequestRejectedError,
  Errors.ServiceNotFoundError,
  Errors.ServiceNotAvailableError,
];

/**
 * For retryPolicy.check: a time-out or rejection of a call that may be sent again. The mark is
 * used up by the first check, the remote call's own. moleculer's retry also wraps local actions,
 * and the caller's (the gateway's `rest`, whose request is already consumed: run again, it
 * answers 404) must not repeat itself when the same error reaches it: a local action also drops
 * the mark of what it throws (`localAction` below), whatever path the error took.
 */
export function mayRetry(err: unknown): boolean {
  if (!RETRIED.some((kind) => err instanceof kind)) return false;
  return retryMarks.delete(err as object);
}

interface PendingRequests {
  removePendingRequest(id: string): void;
}

/** What moleculer's Retry middleware keeps on a call's context: attempts so far (0 on the first). */
interface RetriedContext {
  _retryAttempts?: number;
}

/**
 * When each call's time-out ends, by its options object: moleculer hands every retry a copy of
 * the context that shares the first attempt's options, and nothing else of it.
 */
const deadlines = new WeakMap<object, number>();

function deadlineOf(ctx: Context, timeout: number): number {
  const attempt = (ctx as unknown as RetriedContext)._retryAttempts ?? 0;
  const known = deadlines.get(ctx.options);
  if (attempt > 0 && known !== undefined) return known;
  const deadline = Date.now() + timeout;
  deadlines.set(ctx.options, deadline);
  return deadline;
}

/** How long this attempt may take: short while a retry is left, else all the time left. */
export function attemptBudgetMs(
  ctx: Context,
  timeLeftMs: number,
  retries: number,
): { ms: number; retryAfter: boolean } {
  const perAttempt = attemptTimeoutMs(ctx);
  const attempt = (ctx as unknown as RetriedContext)._retryAttempts ?? 0;
  const retryLeft = perAttempt !== null && attempt < (ctx.options.retries ?? retries);
  if (!retryLeft || perAttempt >= timeLeftMs) return { ms: timeLeftMs, retryAfter: false };
  return { ms: perAttempt, retryAfter: true };
}

/**
 * Cutting an attempt short is a bet that its node is gone. When every answer is slow (an
 * overloaded service) the bet is lost everywhere, and sending again would add load where there
 * is already too much: early re-sends to a service are allowed for one of its calls in ten,
 * with a reserve of five for the handful of requests a killed replica held. Without one, an
 * attempt waits for the rest of its time-out. One budget per called service: a slow one spends
 * its own, never another's.
 */
export class EarlyRetryBudget {
  /** Counted in calls: a re-send costs `callsPerRetry` of them. */
  private credit: number;

  constructor(
    private readonly callsPerRetry = 10,
    private readonly reserve = 5,
  ) {
    this.credit = reserve * callsPerRetry;
  }

  /** A call made (its first attempt): a fraction of a re-send earned. */
  called(): void {
    this.credit = Math.min(this.reserve * this.callsPerRetry, this.credit + 1);
  }

  /** True, and one re-send spent, when one is left. */
  take(): boolean {
    if (this.credit < this.callsPerRetry) return false;
    this.credit -= this.callsPerRetry;
    return true;
  }
}

export function remoteCallsMiddleware(): Middleware {
  let broker: ServiceBroker;
  const budgets = new Map<string, EarlyRetryBudget>();
  const budgetOf = (actionName: string) => {
    const service = actionName.slice(0, actionName.lastIndexOf("."));
    let budget = budgets.get(service);
    if (!budget) budgets.set(service, (budget = new EarlyRetryBudget()));
    return budget;
  };
  return {
    name: "RemoteCalls",
    created(b: ServiceBroker) {
      broker = b;
    },
    /**
     * What a local action throws is its own failure, never a remote call's attempt to repeat.
     * The backstop for any failure whose mark the remote call's own check did not use up: once,
     * a call to an action on this node (through NATS, `disableBalancer`) was skipped by
     * moleculer's Retry as a request served here, and the mark reached the calling action's
     * Retry instead (inside it: user middlewares wrap first). `fail` below now lets that check run.
     */
    localAction(next: (ctx: Context) => Promise<unknown>) {
      return function unmarkedFailure(ctx: Context): Promise<unknown> {
        return next(ctx).catch((err: unknown) => {
          if (err !== null && typeof err === "object") retryMarks.delete(err);
          throw err;
        });
      };
    },
    remoteAction(next: (ctx: Context) => Promise<unknown>, action: { name: string }) {
      return function settledRemoteCall(ctx: Context): Promise<unknown> {
        const transit = broker.transit as unknown as PendingRequests | undefined;
        const timeout = ctx.options.timeout ?? 0;
        const deadline = timeout > 0 ? deadlineOf(ctx, timeout) : Infinity;
        const repeatable = attemptTimeoutMs(ctx) !== null;
        const fail = (err: unknown): never => {
          transit?.removePendingRequest(ctx.id);
          if (err !== null && typeof err === "object" && repeatable && Date.now() < deadline) {
            retryMarks.add(err);
            // moleculer's Retry skips a call whose endpoint is on this node but whose nodeID is
            // another's (nulled above): it takes it for a request served here. This one was made
            // here, and NATS may have sent it to a replica elsewhere that died: it may be repeated.
            if (ctx.endpoint?.local) ctx.nodeID = broker.nodeID;
          }
          throw err;
        };
        const timedOut = () => new Errors.RequestTimeoutError({ action: action.name, nodeID: ctx.nodeID ?? "" });
        if (!(timeout > 0)) return next(ctx).catch(fail);
        const timeLeft = deadline - Date.now();
        // A retry that finds the call's time-out spent: final, and the node is not bothered.
        if (timeLeft <= 0) return Promise.reject(timedOut());
        const retries = broker.options.retryPolicy?.retries ?? 0;
        const budget = attemptBudgetMs(ctx, timeLeft, retries);
        const earlyRetries = budgetOf(action.name);
        if (((ctx as unknown as RetriedContext)._retryAttempts ?? 0) === 0) earlyRetries.called();
        // moleculer-web hands the broker the endpoint it picked, and a call to an endpoint goes to
        // that node, not to the queue group: until the heartbeat check dropped a killed node
        // (6–12 s), half the HTTP requests to its service went to it and waited. Unless the caller
        // named the node, NATS picks a live subscriber.
        if (broker.options.disableBalancer && !ctx.options.nodeID) ctx.nodeID = null;
        const call = next(ctx);
        let timer: NodeJS.Timeout | undefined;
        // Created before the Timeout middleware's own timer (of the whole time-out), so it fires first.
        const expiry = new Promise<never>((_, reject) => {
          const giveUp = () => reject(timedOut());
          timer = setTimeout(() => {
            if (!budget.retryAfter || earlyRetries.take()) giveUp();
            else timer = setTimeout(giveUp, Math.max(0, deadline - Date.now()));
          }, budget.ms);
        });
        return Promise.race([call, expiry])
          .catch(fail)
          .finally(() => clearTimeout(timer));
      };
    },
  } as Middleware;
}
