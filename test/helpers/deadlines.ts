/**
 * Deadlines that hold on a busy machine. `npm test` runs on two cores shared with other work, and
 * several test files run at once: a process that is working can go without the CPU for seconds.
 * Its timers then fire late, and when one fires in the same turn as the answer it was waiting
 * for, Node runs the timer first. A deadline shorter than such a stall races the machine, not the
 * product: `/readyz` once named a database that answered "timeout" because its 1.5 s check
 * deadline passed on a loaded two-core machine (issue 19).
 *
 * So wherever a test waits for something that works — or gives the product a time-out that
 * something working must beat (READINESS_CHECK_TIMEOUT_MS, WEBHOOK_TIMEOUT_MS when the receiver
 * answers) — the deadline is one of these, not a guess of how fast this machine is today. A test
 * whose subject is a time-out still uses a short one where nothing answers at all: nothing races.
 * Jest's own time-outs (testTimeout, 120 s, and the longer ones some files set) only catch a hang:
 * under load a test that usually takes 10 s has taken 28.
 */

/** How long something that works may take to answer here: a receiver, a query, a probe. */
export const ANSWER_WITHIN_MS = 5_000;

/**
 * READINESS_CHECK_TIMEOUT_MS of every test broker and process (the product's default is 1.5 s).
 * A check that meets a hung database still ends, later; no test waits for one.
 */
export const READINESS_CHECK_TIMEOUT_MS = 10_000;

/**
 * How long a test waits for what work in the background does (a relay, a dispatcher, a retry, a
 * recorded outcome) before it gives up. The wait ends as soon as the test sees it: only a failure
 * pays for the length.
 */
export const EVENTUALLY_MS = 30_000;

/**
 * JETSTREAM_API_TIMEOUT_MS of every test broker and process (the product's default is nats.js's
 * 5 s): a replicated stream answers once its NATS nodes agree, and on a loaded machine a start
 * of the three-node cluster drill failed when one answer took longer.
 */
export const JETSTREAM_API_TIMEOUT_MS = 30_000;
