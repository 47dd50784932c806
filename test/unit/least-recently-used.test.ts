import { LeastRecentlyUsed } from "../../shared/least-recently-used";

describe("least recently used map", () => {
  it("when it is full, then the entry neither read nor written for longest is let go", () => {
    const lru = new LeastRecentlyUsed<string, number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.get("a")).toBe(1);
    lru.set("c", 3);
    expect([lru.get("a"), lru.get("b"), lru.get("c")]).toEqual([1, undefined, 3]);
    expect(lru.size).toBe(2);
  });

  it("when a value is made for a missing key, then it is made once; a make that throws stores nothing", () => {
    const lru = new LeastRecentlyUsed<string, number>(10);
    let made = 0;
    const make = () => ++made;
    expect([lru.getOrMake("k", make), lru.getOrMake("k", make)]).toEqual([1, 1]);
    expect(() =>
      lru.getOrMake("bad", () => {
        throw new Error("no");
      }),
    ).toThrow("no");
    expect(lru.getOrMake("bad", make)).toBe(2);
  });
});
