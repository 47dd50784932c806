/**
 * The reusable parts of the document: representation schemas (each from the service that
 * produces it), the problem document, headers, parameters and the error responses.
 */
import { Problem } from "../problem.openapi";
import type { JsonSchema } from "./fastest-to-json-schema";
import { rateLimitHeaders, type RateLimitedAnswer } from "./rate-limit-headers";
import type { ServiceDescription } from "./service-description";

/** Each service's representation schemas, and the problem document every error answers with. */
export function componentSchemas(services: readonly ServiceDescription[]): Record<string, JsonSchema> {
  return Object.assign({}, ...services.map((service) => service.components), { Problem }) as Record<string, JsonSchema>;
}

export const ref = (kind: "schemas" | "headers" | "parameters" | "responses", name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

/**
 * A parameter of the path, with an example (tools that make requests from the document — Dredd,
 * Portman, Prism — need one): the schema's own, else its first allowed value, else its smallest
 * id.
 */
export function pathParameter(name: string, schema: JsonSchema): Record<string, unknown> {
  const listed = (schema.examples ?? schema.enum) as unknown[] | undefined;
  const example = listed?.[0] ?? (schema.type === "integer" ? (schema.minimum ?? 1) : undefined);
  return { name, in: "path", required: true, schema, ...(example !== undefined ? { example } : {}) };
}

export const HEADERS = {
  RequestId: {
    description: "The request id: the caller's `X-Request-Id`, else a new one. Quote it when reporting a problem.",
    required: true,
    schema: { type: "string", maxLength: 128, pattern: "^[\\w.:@/+=-]{1,128}$" },
  },
  Location: {
    description: "URL of the resource this request created.",
    required: true,
    schema: { type: "string", format: "uri-reference" },
  },
  IdempotentReplayed: {
    description:
      "`true` when this answer replays the first response to the same `Idempotency-Key` and body (nothing was created this time); absent otherwise.",
    required: false,
    schema: { const: "true" },
  },
  Link: {
    description: 'The next page, when there is one: `<url>; rel="next"`. Absent on the last page.',
    required: false,
    schema: { type: "string" },
  },
  RetryAfter: {
    description: "Seconds to wait before trying again.",
    required: true,
    // A limit's window (60 s) at most; 5 s for an unreachable database.
    schema: { type: "integer", format: "int32", minimum: 1, maximum: 60 },
  },
  AcceptPost: {
    description:
      "On a body of another media type: the one to send, `application/json` (`application/x-ndjson` for POST /order_imports).",
    required: false,
    schema: { enum: ["application/json", "application/x-ndjson"] },
  },
  AcceptEncoding: {
    description: "On an unsupported `Content-Encoding`: those accepted.",
    required: false,
    schema: { type: "string" },
  },
  Allow: {
    description: "The methods of this path (`HEAD` wherever `GET` is, and `OPTIONS`), e.g. `GET, HEAD, POST, OPTIONS`.",
    required: true,
    schema: { type: "string", maxLength: 100, pattern: "^[A-Z]+(, [A-Z]+)*$" },
  },
  WwwAuthenticate: { description: "Always `Bearer`.", required: true, schema: { type: "string", pattern: "^Bearer" } },
} as const;

export const PARAMETERS = {
  RequestId: {
    name: "X-Request-Id",
    in: "header",
    required: false,
    description:
      "Your own id for this request (1–128 of `A-Za-z0-9_.:@/+=-`); it is returned in `X-Request-ID` and written in our logs. A value outside this pattern is refused with 400 naming the header.",
    schema: { type: "string", maxLength: 128, pattern: "^[\\w.:@/+=-]{1,128}$" },
  },
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "Any unique string (1–255 printable ASCII characters). Sending the same request again with the same key " +
      "replays the first answer instead of acting a second time (a second order, test, redelivery or recovery); " +
      "the same key with another request is 422; on the webhooks actions, the same key while the first request " +
      "is still in progress is 409 (`/problems/idempotency-key-in-flight`), and keys are kept 24 hours.",
    schema: { type: "string", maxLength: 255, pattern: "^[\\x21-\\x7e]{1,255}$" },
  },
} as const;

/** Error statuses, each answered with a problem document. */
export const ERROR_RESPONSES = {
  "400": {
    name: "MalformedJson",
    description:
      "The request cannot be read: the body is not JSON, not UTF-8 or a corrupt compressed body, or a header is malformed (`errors` names it: `X-Request-Id`, `If-Match`, `If-None-Match`).",
  },
  "401": { name: "Unauthenticated", description: "No API key, or an unknown or revoked one." },
  "403": {
    name: "Forbidden",
    description: "The API key lacks the scope this operation needs (`requiredScope` names it).",
  },
  "404": { name: "NotFound", description: "No such resource, or not one this client may see." },
  "409": { name: "Conflict", description: "The request conflicts with the current state." },
  "413": { name: "PayloadTooLarge", description: "The body is over 1 MiB." },
  "415": {
    name: "UnsupportedEncoding",
    description:
      "The body is not `application/json` (UTF-8): `Accept-Post: application/json` says what to send; or its `Content-Encoding` is not identity, gzip, deflate or br (`Accept-Encoding` lists them).",
  },
  "422": {
    name: "ValidationFailed",
    description:
      "Invalid input: `errors` names each bad field by its path (`items[2].orderedQuantity`); unknown body fields and unknown query parameters are refused too, each named.",
  },
  "429": {
    name: "RateLimited",
    description:
      "Too many requests by this client (across all gateway replicas), or too many failed authentications from this address or with this key; wait `Retry-After` seconds.",
  },
  "503": {
    name: "Unavailable",
    description:
      "The database is unreachable or a service is restarting: nothing was written; retry after `Retry-After` seconds.",
  },
  "5XX": {
    name: "ServerError",
    description:
      "Something failed on our side, or a service is too slow; safe to retry with the same `Idempotency-Key`.",
  },
} as const;
export type ErrorStatus = keyof typeof ERROR_RESPONSES;

const PROBLEM_CONTENT = { "application/problem+json": { schema: ref("schemas", "Problem") } };

/** Which rate limit an error's answer reports (gateway/openapi/rate-limit-headers.ts). */
function rateLimitOf(status: ErrorStatus): RateLimitedAnswer {
  if (status === "401") return "failedAuthentication";
  return status === "429" ? "refused" : "checked";
}

/**
 * The problem answer of a status. `rateLimited` false: on the paths that have no rate limit (the
 * operations tag, OPTIONS), which then carry no `RateLimit` fields.
 */
export function errorResponse(status: ErrorStatus, { rateLimited = true } = {}): Record<string, unknown> {
  const headers: Record<string, unknown> = {
    "X-Request-ID": ref("headers", "RequestId"),
    ...(rateLimited ? rateLimitHeaders(rateLimitOf(status)) : {}),
  };
  if (status === "401") headers["WWW-Authenticate"] = ref("headers", "WwwAuthenticate");
  if (status === "429" || status === "503") headers["Retry-After"] = ref("headers", "RetryAfter");
  if (status === "415")
    Object.assign(headers, {
      "Accept-Post": ref("headers", "AcceptPost"),
      "Accept-Encoding": ref("headers", "AcceptEncoding"),
    });
  return { description: ERROR_RESPONSES[status].description, headers, content: PROBLEM_CONTENT };
}

/** The answers of what checks nothing but the request id (the operations tag, OPTIONS): no key, no rate limit. */
const OPEN_RESPONSES = {
  RequestIdRefused: {
    description: "The `X-Request-Id` header is malformed (`errors` names it).",
    headers: { "X-Request-ID": ref("headers", "RequestId") },
    content: PROBLEM_CONTENT,
  },
  MethodsAllowed: {
    description:
      "The methods this path answers, in `Allow`; nothing else is done. Any other method is answered 405 with the same `Allow` (a problem document).",
    headers: { Allow: ref("headers", "Allow"), "X-Request-ID": ref("headers", "RequestId") },
  },
};

export function responseComponents(): Record<string, unknown> {
  return {
    ...Object.fromEntries(
      (Object.keys(ERROR_RESPONSES) as ErrorStatus[]).map((status) => [
        ERROR_RESPONSES[status].name,
        errorResponse(status),
      ]),
    ),
    ...OPEN_RESPONSES,
  };
}
