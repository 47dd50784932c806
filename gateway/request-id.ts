/**
 * How a request is identified. `X-Request-Id`: the caller's own id for a request, when it keeps
 * the documented pattern; a malformed one is refused (400 naming the header) rather than
 * silently replaced, so a caller never searches our logs for an id we did not use.
 * `traceparent` (W3C Trace Context): the caller's trace, which the request's span continues; a
 * malformed one is ignored and the request starts a trace of its own, as the W3C
 * recommendation asks (shared/observability/tracing.ts).
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { SpanStatusCode } from "@opentelemetry/api";
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import { MalformedRequestError } from "../shared/errors";
import { inSpan, SpanKind, traceContextOf } from "../shared/observability/tracing";

export const REQUEST_ID_HEADER = "X-Request-Id";
/** 1 to 128 of A-Z a-z 0-9 _ . : @ / + = - (the OpenAPI parameter states the same pattern). */
export const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** The caller's id, or a new one when none was sent; throws the 400 when the one sent is malformed. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers["x-request-id"];
  if (given === undefined) return randomUUID();
  if (typeof given !== "string" || !REQUEST_ID.test(given)) {
    throw MalformedRequestError.header(REQUEST_ID_HEADER, "Must be 1 to 128 of A-Z a-z 0-9 _ . : @ / + = -.");
  }
  return given;
}

/** What moleculer-web leaves on the request once it has routed it. */
type RoutedRequest = IncomingMessage & { $alias?: { fullPath?: string } };

/**
 * Handles the request in a server span, under the caller's `traceparent` when it sent a valid
 * one. Named `<method> <route>` (the alias path, never the raw URL) once the route is known.
 */
export function traceRequest<T>(req: RoutedRequest, res: ServerResponse, handle: () => Promise<T>): Promise<T> {
  const method = req.method ?? "GET";
  return inSpan(
    method,
    {
      kind: SpanKind.SERVER,
      parent: traceContextOf(req.headers.traceparent),
      attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_PATH]: (req.url ?? "/").split("?")[0] },
    },
    async (span) => {
      try {
        return await handle();
      } finally {
        const route = req.$alias?.fullPath;
        if (route) span.updateName(`${method} ${route}`).setAttribute(ATTR_HTTP_ROUTE, route);
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.statusCode);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
    },
  );
}
