import { deliveryFigures, percentiles } from "../../bench/webhooks-figures";
import type { ReceivedRequest } from "../../bench/webhook-sink-client";

const receipt = (at: number, code: string, path: string, webhookId: string): ReceivedRequest => ({
  at,
  code,
  path,
  webhookId,
  event: "sales_order_validated",
});

describe("bench: webhook delivery figures", () => {
  it("when every (order, path) pair arrives once, then none is missing and latency is receipt minus answer", () => {
    const answered = new Map<string, number | null>([
      ["ORD-1", 1000],
      ["ORD-2", 2000],
    ]);
    const figures = deliveryFigures(
      answered,
      ["/hook/1", "/hook/2"],
      [
        receipt(1010, "ORD-1", "/hook/1", "a"),
        receipt(1020, "ORD-1", "/hook/2", "b"),
        receipt(2030, "ORD-2", "/hook/1", "c"),
        receipt(2040, "ORD-2", "/hook/2", "d"),
      ],
    );
    expect(figures).toMatchObject({
      expected: 4,
      received: 4,
      missing: 0,
      duplicates: 0,
      unexpected: 0,
      firstToLastMs: 1030,
    });
    expect(figures.latencyMs).toMatchObject({ min: 10, max: 40, count: 4 });
    expect(figures.perSecond).toBeCloseTo((4 / 1030) * 1000, 1);
  });

  it("when one event's webhook-id reaches every subscription's path, then each path's receipt counts once, not as a duplicate", () => {
    const answered = new Map<string, number | null>([["ORD-1", 1000]]);
    const figures = deliveryFigures(
      answered,
      ["/hook/1", "/hook/2"],
      [receipt(1010, "ORD-1", "/hook/1", "msg_1"), receipt(1020, "ORD-1", "/hook/2", "msg_1")],
    );
    expect(figures).toMatchObject({ expected: 2, received: 2, missing: 0, duplicates: 0 });
  });

  it("when a webhook-id arrives twice and a pair never arrives, then one duplicate and one missing pair are counted", () => {
    const answered = new Map<string, number | null>([["ORD-1", 1000]]);
    const figures = deliveryFigures(
      answered,
      ["/hook/1", "/hook/2"],
      [
        receipt(1010, "ORD-1", "/hook/1", "a"),
        receipt(1500, "ORD-1", "/hook/1", "a"),
        receipt(1600, "ORD-9", "/hook/1", "z"),
      ],
    );
    expect(figures).toMatchObject({
      expected: 2,
      received: 1,
      missing: 1,
      duplicates: 1,
      unexpected: 1,
      missingExamples: ["ORD-1 /hook/2"],
    });
  });

  it("when no validation time is known (the baseline), then there is no latency but the rate is measured", () => {
    const figures = deliveryFigures(
      new Map([["ORD-1", null]]),
      ["/hook/1", "/hook/2"],
      [receipt(0, "ORD-1", "/hook/1", "a"), receipt(500, "ORD-1", "/hook/2", "b")],
    );
    expect(figures.latencyMs).toBeNull();
    expect(figures.perSecond).toBe(4);
  });

  it("when percentiles are taken, then they are the nearest-rank values", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentiles(values)).toMatchObject({ p50: 50, p90: 90, p99: 99, max: 100, min: 1 });
  });
});
