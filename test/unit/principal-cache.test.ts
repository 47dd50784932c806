/**
 * The gateway's principal cache (gateway/principal-cache.ts): one look-up per key at a time, and
 * nothing kept across a change of a client.
 */
import type { Principal } from "../../shared/security/auth";
import { PrincipalCache } from "../../gateway/principal-cache";

const partner: Principal = { clientId: 7, name: "Partner", kind: "partner", scopes: ["partner"], webhookEvents: [] };

/** A look-up the test answers when it wants, counting the calls. */
function controlledLookUp() {
  const calls: { apiKey: string; answer(p: Principal): void; refuse(err: Error): void }[] = [];
  const lookUp = (apiKey: string) =>
    new Promise<Principal>((resolve, reject) => {
      calls.push({ apiKey, answer: resolve, refuse: reject });
    });
  return { calls, lookUp };
}

describe("the principal cache", () => {
  it("when many requests with one key arrive while it is looked up, then one call answers them all, and the next request is served from the cache", async () => {
    const cache = new PrincipalCache(60_000);
    const { calls, lookUp } = controlledLookUp();
    const waiting = Array.from({ length: 20 }, () => cache.resolve("key-a", lookUp));
    expect(calls).toHaveLength(1);
    calls[0].answer(partner);
    expect(await Promise.all(waiting)).toEqual(Array(20).fill(partner));
    expect(await cache.resolve("key-a", lookUp)).toEqual(partner);
    expect(calls).toHaveLength(1);
  });

  it("when two keys are looked up at once, then each has its own call", async () => {
    const cache = new PrincipalCache(60_000);
    const { calls, lookUp } = controlledLookUp();
    const a = cache.resolve("key-a", lookUp);
    const b = cache.resolve("key-b", lookUp);
    expect(calls.map((c) => c.apiKey)).toEqual(["key-a", "key-b"]);
    calls[0].answer(partner);
    calls[1].answer({ ...partner, clientId: 8 });
    expect((await a).clientId).toBe(7);
    expect((await b).clientId).toBe(8);
  });

  it("when the look-up fails, then its waiters get the failure and the next request asks again", async () => {
    const cache = new PrincipalCache(60_000);
    const { calls, lookUp } = controlledLookUp();
    const waiting = [cache.resolve("key-a", lookUp), cache.resolve("key-a", lookUp)];
    calls[0].refuse(new Error("clients unavailable"));
    await expect(Promise.all(waiting)).rejects.toThrow("clients unavailable");
    const again = cache.resolve("key-a", lookUp);
    expect(calls).toHaveLength(2);
    calls[1].answer(partner);
    expect(await again).toEqual(partner);
  });

  it("when a client changes during a look-up, then a request after the change does not wait for it, and its answer is not kept", async () => {
    const cache = new PrincipalCache(60_000);
    const { calls, lookUp } = controlledLookUp();
    const before = cache.resolve("key-a", lookUp);
    cache.forget(7);
    const after = cache.resolve("key-a", lookUp);
    expect(calls).toHaveLength(2);
    calls[0].answer(partner);
    // The request that came before the change gets the answer of its time.
    expect(await before).toEqual(partner);
    calls[1].answer({ ...partner, scopes: [] });
    expect((await after).scopes).toEqual([]);
    // Only the look-up begun after the change was kept.
    expect((await cache.resolve("key-a", lookUp)).scopes).toEqual([]);
    expect(calls).toHaveLength(2);
  });
});
