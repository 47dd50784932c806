/**
 * `X-Request-Id`: the caller's own id for a request, when it keeps the documented pattern; a
 * malformed one is refused (400 naming the header) rather than silently replaced, so a caller
 * never searches our logs for an id we did not use.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { MalformedRequestError } from "../shared/errors";

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
