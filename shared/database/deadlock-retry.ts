/**
 * A statement that PostgreSQL may end as the victim of a deadlock (SQLSTATE 40P01), run again.
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

const DEADLOCK_DETECTED = "40P01";

/** True when the error is PostgreSQL ending a statement to break a deadlock. */
export function isDeadlock(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === DEADLOCK_DETECTED;
}

/** A deadlock's victim three times in a row is no longer bad luck: the error goes on. */
const ATTEMPTS = 3;

/** `statement()`, sent again when it was a deadlock's victim; any other error goes on at once. */
export async function againAfterDeadlock<T>(statement: () => PromiseLike<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (err) {
      if (!isDeadlock(err) || attempt >= ATTEMPTS) throw err;
    }
  }
}
