/**
 * The one place where the database's errors are recognised. "The database cannot be reached":
 * refused or dropped connections, a server shutting down or restarting, a pool that timed out
 * waiting for a connection. Such an error becomes a ServiceUnavailableError (503 with Retry-After
 * at the gateway) instead of surfacing as an unknown error (a 500 with a stack trace in the logs).
 * Also a broken unique constraint (conflictOnUnique) and a deadlock's victim (againAfterDeadlock).
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

const DEADLOCK_DETECTED = "40P01";

/** True when the error is PostgreSQL ending a statement to break a deadlock. */
export function isDeadlock(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === DEADLOCK_DETECTED;
}

/** A deadlock's victim three times in a row is no longer bad luck: the error goes on. */
const DEADLOCK_ATTEMPTS = 3;

/**
 * `statement()`, sent again when PostgreSQL ended it as the victim of a deadlock; any other error
 * goes on at once.
 *
 * When two transactions wait for each other's row locks, PostgreSQL ends one of them after
 * `deadlock_timeout` (1 s by default) and the other goes on. A statement that is safe to run
 * twice and runs outside a transaction of the caller's (it commits alone, so nothing else of the
 * caller's is lost with it) can simply be sent again: the lock it waited for is free by then.
 * Used by the per-entity releases (services/webhooks/webhooks.ordering.ts): two processes'
 * releases lock the waiting deliveries in the order each plan finds them, and bench:webhooks saw
 * one die of a deadlock, the deliveries it would have released then waiting out their 22 s
 * lease. Locking the rows in id order instead changed the statements' plans, and cost far more
 * (bench/README.md, issue 23) than the second it takes PostgreSQL, now and then, to find one.
 */
export async function againAfterDeadlock<T>(statement: () => PromiseLike<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (err) {
      if (!isDeadlock(err) || attempt >= DEADLOCK_ATTEMPTS) throw err;
    }
  }
}
