/**
 * What a receiver counting arrivals saw of a rate: the most arrivals within any one second (a
 * window opening at each arrival, stricter than calendar seconds), and the average rate of the run.
 */

/** The most arrivals within [t, t + 1 s) for any arrival time t. */
export function busiestSecond(arrivals: readonly number[]): number {
  const times = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && times[j] < times[i] + 1000) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

export interface RateFigures {
  count: number;
  /** From the first arrival to the last. */
  seconds: number;
  /** Arrivals after the first, per second of that time. */
  perSecond: number;
}

export function rateFigures(arrivals: readonly number[]): RateFigures {
  const first = Math.min(...arrivals);
  const seconds = (Math.max(...arrivals) - first) / 1000;
  return { count: arrivals.length, seconds, perSecond: seconds > 0 ? (arrivals.length - 1) / seconds : 0 };
}
