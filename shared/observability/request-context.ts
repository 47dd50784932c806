/**
 * The request id of the work being done, wherever it is done. The gateway takes it from
 * `X-Request-Id` (or makes one) and moleculer carries it as `ctx.requestID` through every nested
 * call, local or over NATS. `requestContextMiddleware` puts it in an AsyncLocalStorage around
 * each local action and event handler, so every log line written meanwhile carries `requestId`
 * (pino's `mixin` reads it, see moleculer.config.ts) without any handler passing it around.
 *
 * Work that outlives the request (an outbox row, a webhook delivery) stores the id and runs
 * later under `withRequestId(storedId, ...)`, so its log lines name the request that caused it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Context, Middleware } from "moleculer";
import { traceLogFields } from "./tracing";

interface RequestScope {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** The request id of the current work, if it was started by (or on behalf of) a request. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** Runs `work` so that its log lines (and anything it stores) carry `requestId`. */
export function withRequestId<T>(requestId: string | null | undefined, work: () => T): T {
  return requestId ? storage.run({ requestId }, work) : work();
}

/**
 * Fields every log line gets (pino `mixin`): `{ requestId }` inside a request, and the trace
 * and span it was written in (`trace_id`, `span_id`, shared/observability/tracing.ts) inside a trace.
 */
export function requestLogFields(): { requestId?: string; trace_id?: string; span_id?: string } {
  const requestId = currentRequestId();
  return { ...(requestId ? { requestId } : {}), ...traceLogFields() };
}

type Handler = (ctx: Context) => Promise<unknown>;

function bindRequestId(next: Handler): Handler {
  return function withRequestScope(ctx: Context) {
    return withRequestId(ctx.requestID, () => next(ctx));
  };
}

/** Binds `ctx.requestID` to the AsyncLocalStorage around local actions and event handlers. */
export const requestContextMiddleware: Middleware = {
  name: "RequestContext",
  localAction: ((next: Handler) => bindRequestId(next)) as Middleware["localAction"],
  localEvent: ((next: Handler) => bindRequestId(next)) as Middleware["localEvent"],
};
