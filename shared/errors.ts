/**
 * Domain errors shared by every service. They know nothing of HTTP: each carries a `type`
 * (a stable machine name) and optional `data`. The gateway maps types to status codes and
 * RFC 9457 documents in one place (shared/http/problem.ts).
 *
 * They extend MoleculerError so that `type` and `data` survive the trip over NATS
 * (moleculer serialises message, code, type and data).
 */
import { Errors } from "moleculer";

export const ErrorType = {
  validation: "VALIDATION_FAILED",
  unauthenticated: "UNAUTHENTICATED",
  forbidden: "FORBIDDEN",
  notFound: "NOT_FOUND",
  conflict: "CONFLICT",
  idempotencyMismatch: "IDEMPOTENCY_KEY_REUSED",
  idempotencyInFlight: "IDEMPOTENCY_KEY_IN_FLIGHT",
  subscriptionDisabled: "SUBSCRIPTION_DISABLED",
  preconditionFailed: "PRECONDITION_FAILED",
  rateLimited: "RATE_LIMITED",
  malformedRequest: "MALFORMED_REQUEST",
  payloadTooLarge: "PAYLOAD_TOO_LARGE",
  unsupportedMediaType: "UNSUPPORTED_MEDIA_TYPE",
  methodNotAllowed: "METHOD_NOT_ALLOWED",
  unavailable: "UNAVAILABLE",
  notTaken: "NOT_TAKEN",
} as const;
export type ErrorTypeName = (typeof ErrorType)[keyof typeof ErrorType];

/** One invalid field, named by its path in the request body (`items[2].orderedQuantity`). */
export interface FieldError {
  path: string;
  message: string;
}

abstract class DomainError extends Errors.MoleculerError {
  protected constructor(message: string, code: number, type: ErrorTypeName, data?: Record<string, unknown>) {
    super(message, code, type, data);
    this.name = new.target.name;
  }
}

/**
 * Whether an error is one of the domain's own answers (a 4xx, or the 503 of a service that is
 * down): a refusal the code decided on, as opposed to a failure it met (a statement, a socket).
 */
export function isRefusal(err: unknown): boolean {
  return err instanceof DomainError;
}

/** Input that is well-formed JSON but breaks a rule: one entry per bad field. */
export class InvalidInputError extends DomainError {
  /** What the constructor puts in `data` (moleculer types it `any`). */
  declare data: { errors: FieldError[]; errorCount?: number };

  /** `errorCount`: how many problems there were in all, when `errors` lists only the first ones. */
  constructor(errors: FieldError[], message = "The request has invalid fields.", errorCount = errors.length) {
    super(message, 422, ErrorType.validation, errorCount > errors.length ? { errors, errorCount } : { errors });
  }
  static field(path: string, message: string): InvalidInputError {
    return new InvalidInputError([{ path, message }]);
  }
  /** A rule across fields ("at least one of …"): each field it involves, named with the same message. */
  static fields(paths: readonly string[], message: string): InvalidInputError {
    return new InvalidInputError(paths.map((path) => ({ path, message })));
  }
}

export class UnauthenticatedError extends DomainError {
  constructor(message = "A valid API key is required: send `Authorization: Bearer <key>`.") {
    super(message, 401, ErrorType.unauthenticated);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message: string, data?: Record<string, unknown>) {
    super(message, 403, ErrorType.forbidden, data);
  }
  static missingScope(scope: string): ForbiddenError {
    return new ForbiddenError(`This API key lacks the \`${scope}\` scope.`, { requiredScope: scope });
  }
}

export class NotFoundError extends DomainError {
  constructor(entity: string, id: string | number, path?: string) {
    super(`No ${entity} with id ${JSON.stringify(id)}.`, 404, ErrorType.notFound, {
      entity,
      id,
      ...(path ? { path } : {}),
    });
  }
}

/** The field error for a reference inside a request that names nothing visible to the caller. */
export function unknownReferenceField(path: string, entity: string, value: string | number): FieldError {
  return { path, message: `No ${entity} matches ${JSON.stringify(value)}.` };
}

/**
 * A reference inside a request body that names nothing: 422 with the field's path. Another
 * partner's reference gets the same answer, so it stays invisible.
 */
export function unknownReference(path: string, entity: string, value: string | number): InvalidInputError {
  return new InvalidInputError([unknownReferenceField(path, entity, value)]);
}

export class ConflictError extends DomainError {
  constructor(message: string, data?: Record<string, unknown>) {
    super(message, 409, ErrorType.conflict, data);
  }
}

/**
 * A valid row of a batch sent with `errorPolicy: reject_all` whose batch had a refused row: it
 * was not taken, and would be if sent again without the refused rows (424 Failed Dependency).
 */
export class RowNotTakenError extends DomainError {
  constructor(refusedRows: number[]) {
    super(
      `Not taken: the batch asked for all rows or none (errorPolicy reject_all) and row(s) ${refusedRows.join(", ")} were refused.`,
      424,
      ErrorType.notTaken,
      { refusedRows },
    );
  }
}

export class IdempotencyKeyReusedError extends DomainError {
  constructor() {
    super("This Idempotency-Key was already used with a different request body.", 422, ErrorType.idempotencyMismatch);
  }
}

/** The same Idempotency-Key is still being acted on by an earlier request: retry once it answered. */
export class IdempotencyKeyInFlightError extends DomainError {
  constructor() {
    super(
      "A request with this Idempotency-Key is still being processed; retry shortly to get its answer.",
      409,
      ErrorType.idempotencyInFlight,
    );
  }
}

/**
 * An action that would send something asked of a subscription that is disabled: nothing would
 * go out until it is enabled, so it is refused rather than queued. `message` says how to enable it.
 */
export class SubscriptionDisabledError extends DomainError {
  constructor(message: string, data: { subscriptionId: number; disabledReason: string | null }) {
    super(message, 409, ErrorType.subscriptionDisabled, data);
  }
}

/**
 * A change sent with `If-Match` (or `If-None-Match`) that no longer holds: the entity moved on
 * since the client read it. `currentVersion` (null when there is none yet) lets it read again
 * and decide (shared/http/conditional.ts).
 */
export class PreconditionFailedError extends DomainError {
  constructor(entity: string, header: string, currentVersion: number | null) {
    super(
      currentVersion === null
        ? `${header} does not hold: there is no such ${entity} yet.`
        : `${header} does not hold: the ${entity} is at version ${currentVersion}; read it again before changing it.`,
      412,
      ErrorType.preconditionFailed,
      { currentVersion },
    );
  }
}

export class RateLimitedError extends DomainError {
  constructor(retryAfterSeconds: number, message = "Too many requests for this API key; retry later.") {
    super(message, 429, ErrorType.rateLimited, { retryAfterSeconds });
  }
}

/**
 * A request that cannot be read at all (a body that is not JSON, a corrupt compressed body, a
 * malformed header): `errors` names the header when one is at fault.
 */
export class MalformedRequestError extends DomainError {
  constructor(message: string, errors?: FieldError[]) {
    super(message, 400, ErrorType.malformedRequest, errors ? { errors } : undefined);
  }
  static header(name: string, message: string): MalformedRequestError {
    return new MalformedRequestError(`${name}: ${message}`, [{ path: name, message }]);
  }
}

export class PayloadTooLargeError extends DomainError {
  constructor(limitBytes: number, message = `The body is larger than ${limitBytes} bytes.`) {
    super(message, 413, ErrorType.payloadTooLarge, { limitBytes });
  }
}

/** An NDJSON upload with more lines than the import takes (POST /order_imports). */
export class TooManyLinesError extends DomainError {
  constructor(limitLines: number) {
    super(`The body has more than ${limitLines} lines.`, 413, ErrorType.payloadTooLarge, { limitLines });
  }
}

/** What the server would have accepted instead: a media type, or content encodings. */
export interface AcceptedInstead {
  mediaType?: string;
  encodings?: string;
}

export class UnsupportedMediaTypeError extends DomainError {
  constructor(message: string, accepted: AcceptedInstead) {
    super(message, 415, ErrorType.unsupportedMediaType, { accepted });
  }
}

export class MethodNotAllowedError extends DomainError {
  constructor(method: string, allowed: string[]) {
    super(`${method} is not allowed here; allowed: ${allowed.join(", ")}.`, 405, ErrorType.methodNotAllowed, {
      allowed,
    });
  }
}

/**
 * Something this request needs (the database) cannot be reached right now; worth retrying
 * after `retryAfterSeconds`. The message says what, never why: the cause stays in the logs.
 */
export class ServiceUnavailableError extends DomainError {
  constructor(message = "The service is temporarily unavailable; retry shortly.", retryAfterSeconds = 5) {
    super(message, 503, ErrorType.unavailable, { retryAfterSeconds });
  }
}
