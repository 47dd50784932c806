import { OriginSlots } from "../../services/webhooks/webhooks.origin-slots";

const HANGING = "https://hangs.example";
const HEALTHY = "https://answers.example";

describe("OriginSlots", () => {
  it("when an endpoint has its cap in flight, then it has no free slot and is listed as limited; others stay unlisted", () => {
    const slots = new OriginSlots(3);
    for (let i = 0; i < 3; i++) slots.take(HANGING);
    slots.take(HEALTHY);
    expect(slots.free(HANGING)).toBe(0);
    expect(slots.free("https://never-seen.example")).toBe(3);
    expect(slots.limits()).toEqual([
      { endpoint: HANGING, free: 0 },
      { endpoint: HEALTHY, free: 2 },
    ]);
  });

  it("when an attempt times out, then the endpoint gets one slot until an attempt to it is answered, with any status", () => {
    const slots = new OriginSlots(3);
    for (let i = 0; i < 3; i++) slots.take(HANGING);
    slots.release(HANGING, "timeout");
    expect(slots.onProbation(HANGING)).toBe(true);
    // Two attempts from before the time-out still hang: no probe until they end.
    expect(slots.free(HANGING)).toBe(0);
    slots.release(HANGING, "timeout");
    slots.release(HANGING, "timeout");
    expect(slots.free(HANGING)).toBe(1);

    slots.take(HANGING);
    slots.release(HANGING, "error");
    expect(slots.onProbation(HANGING)).toBe(true);
    slots.take(HANGING);
    slots.release(HANGING, "rejected");
    expect(slots.onProbation(HANGING)).toBe(false);
    expect(slots.free(HANGING)).toBe(3);
    expect(slots.limits()).toEqual([]);
  });

  it("when half of what an endpoint is allowed is free, then it is worth claiming for again", () => {
    const slots = new OriginSlots(4);
    for (let i = 0; i < 4; i++) slots.take(HEALTHY);
    slots.release(HEALTHY, "delivered");
    expect(slots.halfFree(HEALTHY)).toBe(false);
    slots.release(HEALTHY, "delivered");
    expect(slots.halfFree(HEALTHY)).toBe(true);
  });

  it("when an endpoint on probation has not been tried for a day, then it is forgotten", () => {
    let now = 0;
    const slots = new OriginSlots(2, () => now);
    slots.take(HANGING);
    slots.release(HANGING, "timeout");
    expect(slots.limits()).toEqual([{ endpoint: HANGING, free: 1 }]);
    now += 25 * 3_600_000;
    expect(slots.limits()).toEqual([]);
    expect(slots.onProbation(HANGING)).toBe(false);
  });
});
