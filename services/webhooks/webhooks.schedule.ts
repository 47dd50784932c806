/**
 * When a failed delivery is tried again: WEBHOOK_RETRY_SCHEDULE lists the seconds to wait
 * before each retry (by default 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h:
 * about a day in all), each stretched by a random jitter of up to 20% so that the retries of
 * many deliveries that failed together do not come back together.
 */
export const MAX_JITTER = 0.2;

/** Milliseconds to wait after the `attemptsMade`-th failed attempt, or null when none is left. */
export function retryDelayMs(
  attemptsMade: number,
  scheduleSeconds: readonly number[],
  random: () => number = Math.random,
): number | null {
  const seconds = scheduleSeconds[attemptsMade - 1];
  if (seconds === undefined) return null;
  return Math.round(seconds * 1000 * (1 + MAX_JITTER * random()));
}

/**
 * Milliseconds a `Retry-After` header asks to wait (RFC 9110: delay-seconds or an HTTP date),
 * capped at `maxMs`; null when there is none or it cannot be read.
 */
export function retryAfterMs(header: unknown, maxMs: number, now: number = Date.now()): number | null {
  if (typeof header !== "string" || header.trim() === "") return null;
  const text = header.trim();
  // Every HTTP-date form starts with the day's name; Date.parse alone would take "-5" or "1.5" as dates.
  const asked = /^\d+$/.test(text)
    ? Number(text) * 1000
    : /^[A-Za-z]{3}/.test(text)
      ? Date.parse(text) - now
      : Number.NaN;
  if (!Number.isFinite(asked)) return null;
  return Math.min(Math.max(0, asked), maxMs);
}
