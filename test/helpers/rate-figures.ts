/**
 * What a receiver counting arrivals saw of a rate: the most arrivals within one second — of the
 * clock (`countsPerSecond`, what a receiver counting per second sees), or within any second (a
 * window opening at each arrival, stricter) — and the average rate of the run.
 */

/**
 * The smallest and the largest, folded: spread into Math.min, a long run's arrivals are more
 * arguments than a call may take (RangeError: Maximum call stack size exceeded).
 */
function extent(values: readonly number[]): [number, number] {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  return [min, max];
}

/** The arrivals of each second of the clock, from the first arrival's second to the last's. */
export function countsPerSecond(arrivals: readonly number[]): number[] {
  const seconds = arrivals.map((t) => Math.floor(t / 1000));
  const [first, last] = extent(seconds);
  const counts = new Array<number>(last - first + 1).fill(0);
  for (const s of seconds) counts[s - first] += 1;
  return counts;
}

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
  const [first, last] = extent(arrivals);
  const seconds = (last - first) / 1000;
  return { count: arrivals.length, seconds, perSecond: seconds > 0 ? (arrivals.length - 1) / seconds : 0 };
}
