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
 * It also decides which failures the broker's retry policy may repeat (moleculer.config.ts):
 * only a time-out, a rejection (the node left) or a "not here" from a stopping node, of a call
 * that is safe to send again
 * (shared/repeatable-calls.ts). Its `check` sees only the error, so the error is marked here.
 */
import { Errors, type Context, type Middleware, type ServiceBroker } from "moleculer";
import { isRepeatableCall } from "./repeatable-calls";

const repeatable = new WeakSet<object>();

/**
 * The node did not answer in time, left, or no longer runs the action: a replica stopping
 * (SIGTERM) still gets requests from its queue group while its services stop.
 */
const RETRIED = [Errors.RequestTimeoutError, Errors.RequestRejectedError, Errors.ServiceNotFoundError, Errors.ServiceNotAvailableError];

/**
 * For retryPolicy.check: a time-out or rejection of a call that may be sent again. The mark is
 * used up by the first check, the remote call's own: moleculer's retry also wraps local actions,
 * and the caller's (the gateway's `rest`, whose request is already consumed) must not repeat
 * itself when the same error reaches it.
 */
export function mayRetry(err: unknown): boolean {
  if (!RETRIED.some((kind) => err instanceof kind)) return false;
  return repeatable.delete(err as object);
}

interface PendingRequests {
  removePendingRequest(id: string): void;
}

export function remoteCallsMiddleware(): Middleware {
  let broker: ServiceBroker;
  return {
    name: "RemoteCalls",
    created(b: ServiceBroker) {
      broker = b;
    },
    remoteAction(next: (ctx: Context) => Promise<unknown>, action: { name: string }) {
      return function settledRemoteCall(ctx: Context): Promise<unknown> {
        const transit = broker.transit as unknown as PendingRequests | undefined;
        const fail = (err: unknown): never => {
          transit?.removePendingRequest(ctx.id);
          if (err !== null && typeof err === "object" && isRepeatableCall(ctx)) repeatable.add(err);
          throw err;
        };
        const call = next(ctx);
        const timeout = ctx.options.timeout ?? 0;
        if (!(timeout > 0)) return call.catch(fail);
        let timer: NodeJS.Timeout | undefined;
        // Created before the Timeout middleware's own timer of the same length, so it fires first.
        const expiry = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Errors.RequestTimeoutError({ action: action.name, nodeID: ctx.nodeID ?? "" })), timeout);
        });
        return Promise.race([call, expiry]).catch(fail).finally(() => clearTimeout(timer));
      };
    },
  } as Middleware;
}
