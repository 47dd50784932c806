/**
 * From what the receiver recorded to the figures: which (order, subscription) deliveries came
 * and which are missing, duplicates (a webhook-id received twice), the rate from the first to the
 * last receipt, and the event-to-receipt latency — receipt time minus the time the validation's
 * answer reached the driver, both on the machine's clock, matched by the order code.
 */
import { deliveryKey, type ReceivedRequest } from "./webhook-sink-client";

export interface Percentiles {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface DeliveryFigures {
  /** Orders × subscription paths. */
  expected: number;
  /** Expected (order, path) pairs that arrived at least once. */
  received: number;
  missing: number;
  /** Requests whose webhook-id had already arrived. */
  duplicates: number;
  /** Requests for a pair that already arrived under another webhook-id (one event made two deliveries). */
  repeatedUnderNewId: number;
  /** Requests for no expected pair (another path, an unknown code). */
  unexpected: number;
  firstToLastMs: number;
  /** Pairs received ÷ (last receipt − first receipt). */
  perSecond: number;
  /** Receipts in each second from the first one: the shape of the burst. */
  perSecondTimeline: number[];
  /** Event-to-receipt, first receipt of each pair; null without validation times (the baseline). */
  latencyMs: Percentiles | null;
  /** Pairs received before the driver had the validation's answer (the event raced the HTTP answer). */
  receivedBeforeAnswer: number;
  /** A few missing pairs, `code path`, for a look in the deliveries API. */
  missingExamples: string[];
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Nearest-rank percentiles (the value below which p % of the samples lie). */
export function percentiles(values: number[]): Percentiles {
  if (values.length === 0) return { count: 0, min: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  return {
    count: sorted.length,
    min: round(sorted[0]),
    mean: round(sorted.reduce((s, v) => s + v, 0) / sorted.length),
    p50: round(at(50)),
    p90: round(at(90)),
    p99: round(at(99)),
    max: round(sorted[sorted.length - 1]),
  };
}

const MISSING_EXAMPLES = 5;

/**
 * @param answeredAt for each expected order code, when its validation was answered (null: no
 *   latency to measure, as for the baseline)
 * @param paths the subscription paths every code is expected on
 */
export function deliveryFigures(
  answeredAt: Map<string, number | null>,
  paths: string[],
  requests: ReceivedRequest[],
): DeliveryFigures {
  const expectedPaths = new Set(paths);
  const seenIds = new Set<string>();
  const firstReceipt = new Map<string, { at: number; webhookId: string }>();
  let duplicates = 0;
  let repeatedUnderNewId = 0;
  let unexpected = 0;
  for (const r of [...requests].sort((a, b) => a.at - b.at)) {
    const key = deliveryKey(r.path, r.webhookId);
    if (r.webhookId && seenIds.has(key)) {
      duplicates++;
      continue;
    }
    if (r.webhookId) seenIds.add(key);
    if (!answeredAt.has(r.code) || !expectedPaths.has(r.path)) {
      unexpected++;
      continue;
    }
    const pair = `${r.code} ${r.path}`;
    if (firstReceipt.has(pair)) repeatedUnderNewId++;
    else firstReceipt.set(pair, { at: r.at, webhookId: r.webhookId });
  }

  const receipts = [...firstReceipt.values()].map((r) => r.at);
  const first = receipts.reduce((m, at) => Math.min(m, at), receipts[0] ?? 0);
  const last = receipts.reduce((m, at) => Math.max(m, at), receipts[0] ?? 0);
  const timeline: number[] = [];
  for (const at of receipts) {
    const second = Math.floor((at - first) / 1000);
    timeline[second] = (timeline[second] ?? 0) + 1;
  }

  const latencies: number[] = [];
  let receivedBeforeAnswer = 0;
  for (const [pair, receipt] of firstReceipt) {
    const answered = answeredAt.get(pair.slice(0, pair.indexOf(" ")));
    if (answered === null || answered === undefined) continue;
    latencies.push(receipt.at - answered);
    if (receipt.at < answered) receivedBeforeAnswer++;
  }

  const expected = answeredAt.size * paths.length;
  const missingExamples: string[] = [];
  for (const code of answeredAt.keys()) {
    for (const path of paths) {
      if (missingExamples.length < MISSING_EXAMPLES && !firstReceipt.has(`${code} ${path}`))
        missingExamples.push(`${code} ${path}`);
    }
  }
  const firstToLastMs = last - first;
  return {
    expected,
    received: firstReceipt.size,
    missing: expected - firstReceipt.size,
    duplicates,
    repeatedUnderNewId,
    unexpected,
    firstToLastMs,
    perSecond: firstToLastMs > 0 ? round((firstReceipt.size / firstToLastMs) * 1000) : 0,
    perSecondTimeline: Array.from(timeline, (n) => n ?? 0),
    latencyMs: latencies.length > 0 ? percentiles(latencies) : null,
    receivedBeforeAnswer,
    missingExamples,
  };
}
