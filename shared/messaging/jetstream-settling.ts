/**
 * A JetStream request made while the NATS cluster settles, tried again instead of failing.
 *
 * On a NATS cluster, a node that restarts (or that is slow, on a busy machine) leaves the groups
 * it led electing new leaders for a few seconds: a stream or consumer request then times out, or
 * is answered "JetStream system temporarily unavailable". A process whose start met that once
 * exited with "Failed to start" although the cluster was fine a few seconds later (CI's cluster
 * drill: the orders process died mid-run, its last event still in its outbox). Such a request
 * is now sent again, with exponential backoff (exponential-backoff: maintained, typed, and with
 * the jitter and the "should this be retried" hook a hand-written loop would re-invent), for up
 * to SETTLE_WINDOW_MS; an answer that is a refusal (a stream's settings, a replica count NATS
 * cannot place) still fails the start at once, as does a cluster that has not settled by then.
 */
import { backOff } from "exponential-backoff";

/** How long a start keeps sending a JetStream request again while the cluster settles. */
export const SETTLE_WINDOW_MS = 60_000;

/** At least this many attempts, whatever the window: one JetStream API time-out may outlast it. */
const MIN_ATTEMPTS = 3;

/** JetStream's "temporarily unavailable" (no leader for the group yet). */
const JETSTREAM_NOT_READY = 10008;

/**
 * A failure a cluster that settles puts right: no answer in time (nats.js "TIMEOUT"), no
 * JetStream server answering yet ("503" no responders), or JetStream "temporarily unavailable".
 */
export function isSettlingJetStream(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { err_code?: number } } | null;
  if (!e || typeof e !== "object") return false;
  return e.code === "TIMEOUT" || e.code === "503" || e.api_error?.err_code === JETSTREAM_NOT_READY;
}

export interface SettleOptions {
  /** What is being done, for the log line of each new attempt. */
  what: string;
  log: (line: string) => void;
  /** Also send again after this failure (besides a settling cluster): why, for the log line; null to give up. */
  alsoRetry?: (err: unknown) => string | null;
  /** Called before each new attempt: undo what the failed one left (a subscription's tracking). */
  beforeRetry?: () => void;
  /** True once a stop began: a stopping process does not insist. */
  stopping?: () => boolean;
  windowMs?: number;
}

/** Runs `attempt`, and runs it again after a failure the cluster's settling explains. */
export function untilJetStreamSettles<T>(attempt: () => Promise<T>, opts: SettleOptions): Promise<T> {
  const firstAt = Date.now();
  const windowMs = opts.windowMs ?? SETTLE_WINDOW_MS;
  return backOff(attempt, {
    numOfAttempts: Number.MAX_SAFE_INTEGER,
    startingDelay: 250,
    maxDelay: 4_000,
    jitter: "full",
    // exponential-backoff passes the number of attempts made so far (its docs say "upcoming").
    retry: (err: unknown, made: number) => {
      if (opts.stopping?.()) return false;
      const why = isSettlingJetStream(err) ? "while the NATS cluster settles" : (opts.alsoRetry?.(err) ?? null);
      if (why === null) return false;
      if (made >= MIN_ATTEMPTS && Date.now() - firstAt >= windowMs) return false;
      const message = err instanceof Error ? err.message : String(err);
      opts.log(`${opts.what} failed (${message}); trying again (attempt ${made + 1}) ${why}.`);
      opts.beforeRetry?.();
      return true;
    },
  });
}
