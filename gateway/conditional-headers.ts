/**
 * Conditional requests at the edge, for every route alike (shared/http/conditional.ts): the
 * request's If-Match and If-None-Match become ctx.meta.preconditions before the call (a
 * malformed one is 400 naming the header), and a read whose answer states the version the
 * client already has becomes 304, with its ETag and no body. An action that changes a versioned
 * entity checks the same preconditions itself, under its row lock.
 */
import type { IncomingMessage } from "node:http";
import type { RequestMeta } from "../shared/security/auth";
import {
  IF_MATCH,
  IF_NONE_MATCH,
  isNotModified,
  parseEntityTags,
  versionOfTag,
  type Preconditions,
} from "../shared/http/conditional";

/** One value of a header that may be sent several times (RFC 9110 §5.3: a list joined by commas). */
function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** Before the call: the request's preconditions into ctx.meta. */
export function readPreconditions(req: IncomingMessage, meta: RequestMeta): void {
  const preconditions: Preconditions = {};
  const ifMatch = headerValue(req, IF_MATCH);
  const ifNoneMatch = headerValue(req, IF_NONE_MATCH);
  if (ifMatch !== undefined) preconditions.ifMatch = parseEntityTags(ifMatch, IF_MATCH);
  if (ifNoneMatch !== undefined) preconditions.ifNoneMatch = parseEntityTags(ifNoneMatch, IF_NONE_MATCH);
  if (ifMatch !== undefined || ifNoneMatch !== undefined) meta.preconditions = preconditions;
}

/**
 * After the call: true when the answer is 304 (a GET or HEAD whose ETag the client named in
 * If-None-Match); the caller then sends no body. The header is dropped from the request either
 * way: moleculer-web's own freshness check (the `fresh` package) would answer 304 to
 * `If-None-Match: *` on any route and any method — a created order included — and has been
 * replaced by this one.
 */
export function answeredNotModified(req: IncomingMessage, meta: RequestMeta): boolean {
  delete req.headers["if-none-match"];
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  const version = versionOfTag(meta.$responseHeaders?.ETag);
  if (version === null || !isNotModified(meta.preconditions, version)) return false;
  meta.$statusCode = 304;
  return true;
}
