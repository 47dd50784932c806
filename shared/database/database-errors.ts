/**
 * The one place where "the database cannot be reached" is recognised: refused or dropped
 * connections, a server shutting down or restarting, a pool that timed out waiting for a
 * connection. Such an error becomes a ServiceUnavailableError (503 with Retry-After at the
 * gateway) instead of surfacing as an unknown error (a 500 with a stack trace in the logs).
 */
import { uniqueViolation } from "./db";
import { ServiceUnavailableError } from "../errors";

/** Node's socket errors on the way to the server. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception), 57P01 admin shutdown, 57P02 crash
 * shutdown, 57P03 cannot connect now (starting up), 53300 too many connections.
 */
const SERVER_CODES = /^(08...|57P0[123]|53300)$/;

/** pg's message when the server closes the socket under a query; knex's pool time-out. */
const MESSAGES = /Connection terminated|Timeout acquiring a connection|Client has encountered a connection error/i;

interface DriverError {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  errors?: unknown;
}

export function isDatabaseUnavailable(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  const e = err as DriverError;
  if (e.name === "KnexTimeoutError") return true;
  if (typeof e.code === "string" && (NETWORK_CODES.has(e.code) || SERVER_CODES.test(e.code))) return true;
  if (typeof e.message === "string" && MESSAGES.test(e.message)) return true;
  // Node's happy-eyeballs connect fails with an AggregateError of one ECONNREFUSED per address.
  return Array.isArray(e.errors) && e.errors.some(isDatabaseUnavailable);
}

export const DATABASE_RETRY_AFTER_SECONDS = 5;

export function databaseUnavailable(): ServiceUnavailableError {
  return new ServiceUnavailableError(
    `The database is unavailable; retry in ${DATABASE_RETRY_AFTER_SECONDS} seconds.`,
    DATABASE_RETRY_AFTER_SECONDS,
  );
}

/**
 * `work`, with a broken unique constraint turned into the conflict the caller names for it (a 409
 * at the gateway): the index is the last word on "already exists", so the error is recognised
 * here, once. `conflict` gets the constraint's name and may look something up; when it gives
 * back nothing (a constraint the caller did not expect), the database's error goes on unchanged,
 * as does every other error.
 */
export async function conflictOnUnique<T>(
  work: Promise<T>,
  conflict: (constraint: string) => Error | undefined | Promise<Error | undefined>,
): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const constraint = uniqueViolation(err);
    if (constraint === null) throw err;
    throw (await conflict(constraint)) ?? err;
  }
}
