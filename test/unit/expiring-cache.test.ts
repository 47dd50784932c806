/**
 * shared/expiring-cache.ts: what getMany keeps. The caches of other services' data (references'
 * contacts and packagings, orders' catalogue packagings) rely on a removal — a change broadcast —
 * winning over a fetch that was under way when it came.
 */
import { ExpiringCache } from "../../shared/expiring-cache";

interface Contact {
  id: number;
  name: string;
}

/** A fetch the test answers when it wants, recording which ids each call asked for. */
function controlledFetch() {
  const calls: { ids: number[]; answer(values: Contact[]): void }[] = [];
  const fetch = (ids: number[]) =>
    new Promise<Contact[]>((resolve) => {
      calls.push({ ids, answer: resolve });
    });
  return { calls, fetch };
}

const idOf = (c: Contact) => c.id;

describe("ExpiringCache.getMany", () => {
  it("when some keys are cached, then only the missing ones are fetched, in one call, and kept", async () => {
    const cache = new ExpiringCache<number, Contact>(60_000, 100);
    cache.set(1, { id: 1, name: "Ada" });
    const { calls, fetch } = controlledFetch();
    const pending = cache.getMany([1, 2, 3, 2], fetch, idOf);
    expect(calls.map((c) => c.ids)).toEqual([[2, 3]]);
    calls[0].answer([{ id: 2, name: "Bob" }]);
    expect(await pending).toEqual([
      { id: 1, name: "Ada" },
      { id: 2, name: "Bob" },
    ]);
    expect(cache.get(2)).toEqual({ id: 2, name: "Bob" });
    expect(cache.get(3)).toBeUndefined();
  });

  it.each([
    ["delete", (cache: ExpiringCache<number, Contact>) => cache.delete(2)],
    ["deleteWhere", (cache: ExpiringCache<number, Contact>) => cache.deleteWhere((c) => c.id === 2)],
    ["clear", (cache: ExpiringCache<number, Contact>) => cache.clear()],
  ])(
    "when a removal (%s) comes while a fetch is under way, then its caller gets the fetched values but they are not kept",
    async (_, remove) => {
      const cache = new ExpiringCache<number, Contact>(60_000, 100);
      const { calls, fetch } = controlledFetch();
      const before = cache.getMany([2], fetch, idOf);
      remove(cache);
      calls[0].answer([{ id: 2, name: "Bob (before the change)" }]);
      expect(await before).toEqual([{ id: 2, name: "Bob (before the change)" }]);
      expect(cache.get(2)).toBeUndefined();

      const after = cache.getMany([2], fetch, idOf);
      expect(calls).toHaveLength(2);
      calls[1].answer([{ id: 2, name: "Bob (after)" }]);
      expect(await after).toEqual([{ id: 2, name: "Bob (after)" }]);
      expect(cache.get(2)).toEqual({ id: 2, name: "Bob (after)" });
    },
  );

  it("when a fetch fails, then nothing is kept and the failure reaches the caller", async () => {
    const cache = new ExpiringCache<number, Contact>(60_000, 100);
    await expect(cache.getMany([5], () => Promise.reject(new Error("crm unavailable")), idOf)).rejects.toThrow(
      "crm unavailable",
    );
    expect(cache.get(5)).toBeUndefined();
  });
});

describe("ExpiringCache.getOrLoad", () => {
  afterEach(() => jest.useRealTimers());

  it("when a load takes longer than the cache's time to live, then what it read is not kept beyond that time after the read began", async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new ExpiringCache<string, string>(1_000, 10);
    let answer: (value: string) => void = () => undefined;
    const loading = cache.getOrLoad("listeners", () => new Promise<string>((resolve) => (answer = resolve)));
    jest.setSystemTime(1_000_000 + 600);
    answer("read at the start");
    expect(await loading).toBe("read at the start");
    expect(cache.get("listeners")).toBe("read at the start");
    jest.setSystemTime(1_000_000 + 1_001);
    expect(cache.get("listeners")).toBeUndefined();
  });
});
