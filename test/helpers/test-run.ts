/**
 * One id per `npm test` run, set by the global setup before any worker starts (workers inherit
 * the environment), so that every database and JetStream stream a run creates on the shared
 * servers carries it (and every PGlite folder of the embedded fallback), and the global teardown
 * can remove exactly those: a run leaves PostgreSQL and NATS as it found them, and never touches
 * another run's (or a colleague's) resources.
 */
import { randomBytes } from "node:crypto";

const RUN_VARIABLE = "OI_TEST_RUN";

/** Called by the global setup: the run id, created once per run. */
export function startTestRun(): string {
  process.env[RUN_VARIABLE] ??= `${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
  return process.env[RUN_VARIABLE];
}

/** This run's id ("adhoc" for a test file run outside jest's global setup). */
export function testRunId(): string {
  return process.env[RUN_VARIABLE] ?? "adhoc";
}

/** Prefix of this run's Moleculer namespaces, and so of its JetStream streams. */
export const namespacePrefix = (run = testRunId()) => `oi-test-${run}-`;
/** Prefix of this run's PostgreSQL databases. */
export const databasePrefix = (run = testRunId()) => `oi_test_${run}_`;
/** Prefix of this run's PGlite data folders (the embedded fallback), in the system's temporary folder. */
export const pgliteFolderPrefix = (run = testRunId()) => `oi-test-${run}-pglite-`;
