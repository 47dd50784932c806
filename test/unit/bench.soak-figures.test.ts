import { Receipts, slopeMBPerHour } from "../../bench/soak-figures";
import type { ReceivedRequest } from "../../bench/webhook-sink-client";

const receipt = (at: number, code: string, path: string): ReceivedRequest => ({
  at,
  code,
  path,
  webhookId: `${code}${path}`,
  event: "sales_order_validated",
});

describe("bench: the soak's bookkeeping", () => {
  it("when receipts arrive, then the first of each order and path counts, later ones are duplicates, and the rest is missing", () => {
    const receipts = new Receipts();
    const validated = new Map([["ORD-1", 1_000]]);
    const first = receipts.add(
      [receipt(1_100, "ORD-1", "/hook/1"), receipt(1_900, "ORD-1", "/hook/2"), receipt(2_000, "ORD-1", "/hook/1")],
      validated,
      "/hook/2",
    );
    expect(first).toEqual({ all: [100, 900], healthy: [100] });
    expect(receipts.duplicates).toBe(1);
    expect(receipts.missing(["ORD-1"], ["/hook/1", "/hook/2", "/hook/3"])).toEqual(["ORD-1 /hook/3"]);
  });

  it("when a receipt comes before the driver saw its validation's answer, then it counts once the answer is known", () => {
    const receipts = new Receipts();
    const validated = new Map<string, number>();
    expect(receipts.add([receipt(1_050, "ORD-2", "/hook/1")], validated, "/hook/9")).toEqual({ all: [], healthy: [] });
    validated.set("ORD-2", 1_000);
    expect(receipts.add([], validated, "/hook/9")).toEqual({ all: [50], healthy: [50] });
  });

  it("when memory grows by 1 MB a minute, then the slope says 60 MB/h; flat samples say 0", () => {
    const minute = 60_000;
    expect(slopeMBPerHour([0, 1, 2, 3].map((m) => [m * minute, 100 + m]))).toBe(60);
    expect(slopeMBPerHour([0, 1, 2].map((m) => [m * minute, 100]))).toBe(0);
    expect(slopeMBPerHour([[0, 100]])).toBe(0);
  });
});
