/**
 * The one place where errors become HTTP: RFC 9457 problem documents
 * (`application/problem+json`) with `type`, `title`, `status`, `detail` and, for invalid
 * input, `errors: [{ path, message }]` naming each bad field. The gateway answers every refused
 * request with one; a batch answers each refused row with one (orders.batch-intake.ts), which is
 * why the mapping sits in shared/ rather than in the gateway, which alone writes responses.
 */
import { ErrorType, type AcceptedInstead, type FieldError } from "../errors";

/** How many problems one answer lists; the rest are counted (`errorCount`). */
export const MAX_REPORTED_PROBLEMS = 50;

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export interface HttpProblem {
  status: number;
  body: ProblemDocument;
  headers: Record<string, string>;
}

interface ErrorLike {
  name?: string;
  message?: string;
  code?: unknown;
  status?: unknown;
  type?: unknown;
  data?: unknown;
}

interface Kind {
  status: number;
  slug: string;
  title: string;
}

/** Moleculer's transport failures; their messages name nodes and actions, so the detail is ours. */
const UNREACHABLE: Kind = { status: 503, slug: "unavailable", title: "Service unavailable" };
const UNREACHABLE_DETAIL = "Part of the service cannot be reached right now; retry shortly.";

/** Error `type` (domain, moleculer or moleculer-web) → status and problem type. */
const KINDS: Record<string, Kind> = {
  [ErrorType.validation]: { status: 422, slug: "validation-failed", title: "Your request has invalid fields" },
  VALIDATION_ERROR: { status: 422, slug: "validation-failed", title: "Your request has invalid fields" },
  [ErrorType.idempotencyMismatch]: {
    status: 422,
    slug: "idempotency-key-reused",
    title: "Idempotency-Key reused with another body",
  },
  [ErrorType.idempotencyInFlight]: {
    status: 409,
    slug: "idempotency-key-in-flight",
    title: "A request with this Idempotency-Key is still in progress",
  },
  [ErrorType.subscriptionDisabled]: {
    status: 409,
    slug: "subscription-disabled",
    title: "The subscription is disabled: enable it first",
  },
  [ErrorType.unauthenticated]: { status: 401, slug: "unauthenticated", title: "Authentication required" },
  NO_TOKEN: { status: 401, slug: "unauthenticated", title: "Authentication required" },
  INVALID_TOKEN: { status: 401, slug: "unauthenticated", title: "Authentication required" },
  [ErrorType.forbidden]: { status: 403, slug: "forbidden", title: "Not allowed for this API key" },
  [ErrorType.notFound]: { status: 404, slug: "not-found", title: "Not found" },
  [ErrorType.conflict]: { status: 409, slug: "conflict", title: "Conflict with the current state" },
  [ErrorType.notTaken]: {
    status: 424,
    slug: "not-taken",
    title: "Not taken: another row of the batch was refused",
  },
  [ErrorType.rateLimited]: { status: 429, slug: "rate-limited", title: "Too many requests" },
  RATE_LIMIT_EXCEEDED: { status: 429, slug: "rate-limited", title: "Too many requests" },
  [ErrorType.malformedRequest]: { status: 400, slug: "malformed-request", title: "The request cannot be read" },
  [ErrorType.payloadTooLarge]: { status: 413, slug: "payload-too-large", title: "The body is too large" },
  [ErrorType.unsupportedMediaType]: {
    status: 415,
    slug: "unsupported-media-type",
    title: "Unsupported media type or content encoding",
  },
  [ErrorType.methodNotAllowed]: { status: 405, slug: "method-not-allowed", title: "Method not allowed on this path" },
  // Refusals of Node's HTTP server itself, before any route runs (gateway/client-errors.ts).
  HEADERS_TOO_LARGE: { status: 431, slug: "headers-too-large", title: "The request's headers are too large" },
  CLIENT_TIMEOUT: { status: 408, slug: "request-timeout", title: "The request took too long to arrive" },
  [ErrorType.unavailable]: { status: 503, slug: "unavailable", title: "Service unavailable" },
  // The broker could not get an answer: no node runs the action (yet, or any more), NATS is down
  // (moleculer's BrokerDisconnectedError is BAD_GATEWAY), or the node did not answer in time.
  // All are passing: 503 with Retry-After tells the client to come back, a 404 or 504 would not.
  REQUEST_TIMEOUT: UNREACHABLE,
  BAD_GATEWAY: UNREACHABLE,
  SERVICE_NOT_FOUND: UNREACHABLE,
  SERVICE_NOT_AVAILABLE: UNREACHABLE,
  SERVICE_UNAVAILABLE: UNREACHABLE,
};

const DOMAIN_TYPES = new Set<string>(Object.values(ErrorType));

/** Kinds whose message is ours and safe to show although they are 5xx. */
const SAYS_ONLY_WHAT = new Set([KINDS[ErrorType.unavailable]]);

/** When a 429 or 503 does not say itself how long to wait. */
const DEFAULT_RETRY_AFTER_SECONDS: Record<number, number> = { 429: 60, 503: 5 };

const INTERNAL: Kind = { status: 500, slug: "internal", title: "Internal error" };

export const PROBLEM_BASE = "/problems/";

/** At most MAX_REPORTED_PROBLEMS entries; `errorCount` tells how many there were when some were left out. */
function boundedErrors(errors: FieldError[], total = errors.length): { errors: FieldError[]; errorCount?: number } {
  const shown = errors.slice(0, MAX_REPORTED_PROBLEMS);
  const count = Math.max(total, errors.length);
  return count > shown.length ? { errors: shown, errorCount: count } : { errors: shown };
}

/** Headers that tell the client what to send instead (RFC 9110 §15.5.6 Allow, §15.5.16 415). */
function hintHeaders(kind: Kind, data: Record<string, unknown>): Record<string, string> {
  if (kind.status === 405 && Array.isArray(data.allowed)) return { Allow: data.allowed.join(", ") };
  const accepted = (data.accepted ?? {}) as AcceptedInstead;
  if (kind.status === 415 && accepted.mediaType) return { "Accept-Post": accepted.mediaType };
  if (kind.status === 415 && accepted.encodings) return { "Accept-Encoding": accepted.encodings };
  return {};
}

/** fastest-validator's error list → our field errors; unknown fields are named one by one. */
export function fieldErrorsFromValidator(data: unknown): FieldError[] {
  if (!Array.isArray(data)) return [];
  return data.flatMap((e: { type?: string; field?: string; message?: string; actual?: unknown }) => {
    const field = (e.field ?? "").replace(/^(body|query|params)\.?/, "");
    if (e.type === "objectStrict" && typeof e.actual === "string") {
      return e.actual
        .split(",")
        .map((k) => k.trim())
        .filter(Boolean)
        .map((k) => ({
          path: field ? `${field}.${k}` : k,
          message: "This field is not allowed.",
        }));
    }
    return [{ path: field, message: e.message ?? "Invalid value." }];
  });
}

function kindOf(err: ErrorLike): Kind {
  const type = typeof err.type === "string" ? err.type : "";
  if (KINDS[type]) return KINDS[type];
  const status = typeof err.status === "number" ? err.status : typeof err.code === "number" ? err.code : 500;
  if (status === 404) return KINDS[ErrorType.notFound];
  if (status === 401) return KINDS[ErrorType.unauthenticated];
  if (status === 403) return KINDS[ErrorType.forbidden];
  if (status === 413) return KINDS[ErrorType.payloadTooLarge];
  // moleculer-web's limiter throws RateLimitExceeded with code 429 and no type.
  if (status === 429) return KINDS[ErrorType.rateLimited];
  // moleculer-web's ServiceUnavailableError (no node runs the action yet) carries no type.
  if (status === 503) return UNREACHABLE;
  if (status === 400) return { status: 400, slug: "bad-request", title: "Bad request" };
  return INTERNAL;
}

export function toProblem(err: unknown, instance?: string): HttpProblem {
  const e = (err ?? {}) as ErrorLike;
  const kind = kindOf(e);
  const headers: Record<string, string> = { "Content-Type": "application/problem+json; charset=utf-8" };
  const data = (e.data ?? {}) as Record<string, unknown>;
  const body: ProblemDocument = {
    type: PROBLEM_BASE + kind.slug,
    title: kind.title,
    status: kind.status,
    // Never leak internals: a 5xx says what happened, not why (our own 503 messages say only that).
    detail:
      kind === UNREACHABLE
        ? UNREACHABLE_DETAIL
        : kind.status >= 500 && !SAYS_ONLY_WHAT.has(kind)
          ? "Something went wrong on our side; it has been logged."
          : (e.message ?? kind.title),
    ...(instance ? { instance } : {}),
  };
  if (kind.slug === "validation-failed") {
    const all =
      e.type === "VALIDATION_ERROR" ? fieldErrorsFromValidator(e.data) : ((data.errors as FieldError[]) ?? []);
    const bounded = boundedErrors(all, Number(data.errorCount ?? all.length));
    Object.assign(body, bounded);
    const count = bounded.errorCount ?? bounded.errors.length;
    body.detail =
      count === 1
        ? `${bounded.errors[0].path || "body"}: ${bounded.errors[0].message}`
        : `${count} fields are invalid.`;
  } else if (kind.slug === "malformed-request" && Array.isArray(data.errors)) {
    body.errors = data.errors as FieldError[];
  }
  Object.assign(headers, hintHeaders(kind, data));
  if (kind.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="api"';
  if (kind.status === 429 || kind.status === 503) {
    const retry = Number(data.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS[kind.status]);
    headers["Retry-After"] = String(Math.max(1, Math.ceil(retry)));
  }
  if (DOMAIN_TYPES.has(String(e.type)) && kind.status < 500) {
    // A domain error's data (the existing order's id, the scope that is missing...) is part of the answer.
    for (const [k, v] of Object.entries(data)) if (k !== "errors" && !(k in body)) body[k] = v;
  }
  return { status: kind.status, body, headers };
}
