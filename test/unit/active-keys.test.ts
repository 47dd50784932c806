/**
 * The gateway's list of active keys (gateway/active-keys.ts): what lets a throttled source's valid
 * key through without letting its bad keys cost a lookup each.
 */
import { ActiveKeys, MIN_RELOAD_MS } from "../../gateway/active-keys";
import { apiKeyHash, lookupOf } from "../../shared/security/api-key-digest";

const lookupOfKey = (key: string) => lookupOf(apiKeyHash(key));

/** A clients service stand-in: the keys it holds now, and how often it was asked. */
function keyStore(...keys: string[]) {
  const store = { keys: [...keys], loads: 0, failing: false };
  const load = async () => {
    store.loads++;
    if (store.failing) throw new Error("clients unreachable");
    return store.keys.map(lookupOfKey);
  };
  return { store, load };
}

describe("the list of active keys", () => {
  beforeEach(() =>
    jest.useFakeTimers({ now: new Date("2026-11-27T10:00:00Z"), doNotFake: ["nextTick", "queueMicrotask"] }),
  );
  afterEach(() => jest.useRealTimers());

  it("when it is asked about keys, then it loads the list once, on first need, and tells the active keys from the rest", async () => {
    const { store, load } = keyStore("oik_valid-one", "oik_valid-two");
    const keys = new ActiveKeys(load, () => {});
    expect(store.loads).toBe(0);
    expect(await keys.mayExist("oik_valid-one")).toBe(true);
    expect(await keys.mayExist("oik_valid-two")).toBe(true);
    expect(store.loads).toBe(1);
  });

  it("when many unknown keys are tried, then the list is reloaded at most once per MIN_RELOAD_MS, whatever their number", async () => {
    const { store, load } = keyStore("oik_valid");
    const keys = new ActiveKeys(load, () => {});
    for (let i = 0; i < 1_000; i++) {
      expect(await keys.mayExist(`oik_guess-${i}`)).toBe(false);
      jest.advanceTimersByTime(10);
    }
    // 1,000 tries over 10 s: the first load, then one per MIN_RELOAD_MS.
    expect(store.loads).toBeLessThanOrEqual(1 + Math.ceil(10_000 / MIN_RELOAD_MS));
  });

  it("when a key is made after the list was loaded, then its first miss after MIN_RELOAD_MS finds it", async () => {
    const { store, load } = keyStore("oik_old");
    const keys = new ActiveKeys(load, () => {});
    expect(await keys.mayExist("oik_new")).toBe(false);
    store.keys.push("oik_new");
    expect(await keys.mayExist("oik_new")).toBe(false);
    jest.advanceTimersByTime(MIN_RELOAD_MS);
    expect(await keys.mayExist("oik_new")).toBe(true);
  });

  it("when a client changes, then the list is loaded afresh: a revoked key stops passing and a new one passes at once", async () => {
    const { store, load } = keyStore("oik_revoked-soon");
    const keys = new ActiveKeys(load, () => {});
    expect(await keys.mayExist("oik_revoked-soon")).toBe(true);
    store.keys = ["oik_rotated-in"];
    keys.forget();
    expect(await keys.mayExist("oik_revoked-soon")).toBe(false);
    expect(await keys.mayExist("oik_rotated-in")).toBe(true);
    expect(store.loads).toBe(2);
  });

  it("when the list is a minute old, then the next question reloads it, a known key too", async () => {
    const { store, load } = keyStore("oik_revoked-quietly");
    const keys = new ActiveKeys(load, () => {});
    expect(await keys.mayExist("oik_revoked-quietly")).toBe(true);
    store.keys = [];
    jest.advanceTimersByTime(60_000);
    expect(await keys.mayExist("oik_revoked-quietly")).toBe(false);
  });

  it("when the clients service cannot be reached, then the error is reported, nothing passes that was not known, and it is not asked again sooner than MIN_RELOAD_MS", async () => {
    const { store, load } = keyStore("oik_valid");
    const errors: unknown[] = [];
    const keys = new ActiveKeys(load, (err) => errors.push(err));
    store.failing = true;
    expect(await keys.mayExist("oik_valid")).toBe(false);
    expect(await keys.mayExist("oik_valid")).toBe(false);
    expect([store.loads, errors.length]).toEqual([1, 1]);
    store.failing = false;
    jest.advanceTimersByTime(MIN_RELOAD_MS);
    expect(await keys.mayExist("oik_valid")).toBe(true);
  });

  it("when several questions come while the list loads, then they share one load", async () => {
    const { store, load } = keyStore("oik_valid");
    const keys = new ActiveKeys(load, () => {});
    const answers = await Promise.all(Array.from({ length: 10 }, () => keys.mayExist("oik_valid")));
    expect(answers).toEqual(Array(10).fill(true));
    expect(store.loads).toBe(1);
  });
});
