import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { KEY_PREFIX_LENGTH } from "../../gateway/auth-throttle";
import { registry } from "../../shared/observability/metrics";
import { startTestBroker, type TestBroker } from "../helpers/broker";

const ADMIN_KEY = "rate-limit-admin-key-0123456789";

function baseUrlOf(t: TestBroker): string {
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A new admin client made directly on the broker, so that making it costs no HTTP budget. */
async function newClient(t: TestBroker): Promise<{ id: number; apiKey: string }> {
  return t.call<{ id: number; apiKey: string }>("clients.create", { name: `c-${Math.random()}`, kind: "admin" });
}

function get(base: string, authorization: string | null, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/api/v1/clients?limit=1`, {
    headers: { ...(authorization === null ? {} : { authorization }), ...headers },
  });
}

/** `Bearer <key>` as many ways as a client might spell it: any case, any run of spaces or tabs. */
const spelling = fc
  .record({
    scheme: fc
      .array(fc.boolean(), { minLength: 6, maxLength: 6 })
      .map((upper) => [..."bearer"].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join("")),
    gap: fc.array(fc.constantFrom(" ", "\t"), { minLength: 1, maxLength: 4 }).map((s) => s.join("")),
    tail: fc.array(fc.constant(" "), { maxLength: 3 }).map((s) => s.join("")),
  })
  .map(
    ({ scheme, gap, tail }) =>
      (key: string) =>
        `${scheme}${gap}${key}${tail}`,
  );

async function expectRateLimited(res: Response, policy: string): Promise<void> {
  expect(res.status).toBe(429);
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.headers.get("ratelimit")).toMatch(new RegExp(`^"${policy}";r=0;t=\\d+$`));
  expect(await res.json()).toMatchObject({ type: "/problems/rate-limited", status: 429, title: "Too many requests" });
}

describe("rate limiting per authenticated client (one gateway)", () => {
  const LIMIT = 6;
  let t: TestBroker;
  let base: string;

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["gateway", "clients"],
      env: { ADMIN_API_KEY: ADMIN_KEY, RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    });
    base = baseUrlOf(t);
  });
  afterAll(() => t?.stop());

  it("when a client makes more requests than the limit in a minute, then each answer says what is left and the next is a 429 problem with Retry-After, while other clients and probes still pass", async () => {
    const [client, other] = [await newClient(t), await newClient(t)];
    for (let i = 1; i <= LIMIT; i++) {
      const res = await get(base, `Bearer ${client.apiKey}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-policy")).toBe(`"default";q=${LIMIT};w=60`);
      expect(res.headers.get("ratelimit")).toMatch(new RegExp(`^"default";r=${LIMIT - i};t=\\d+$`));
    }
    const limited = await get(base, `Bearer ${client.apiKey}`);
    expect(limited.headers.get("x-request-id")).toBeTruthy();
    await expectRateLimited(limited, "default");

    expect((await get(base, `Bearer ${other.apiKey}`)).status).toBe(200);
    for (let i = 0; i <= LIMIT; i++) expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("when one key is sent with any spelling of the Authorization header, then all spellings share one budget", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(spelling, { minLength: LIMIT + 1, maxLength: LIMIT + 1 }), async (spell) => {
        const client = await newClient(t);
        const spellings = spell.map((s) => s(client.apiKey));
        for (const spelling of spellings.slice(0, LIMIT)) expect((await get(base, spelling)).status).toBe(200);
        expect((await get(base, spellings[LIMIT])).status).toBe(429);
      }),
      { numRuns: 5 },
    );
  });

  it("when a client's key is rotated mid-minute, then the new key continues the same budget", async () => {
    const client = await newClient(t);
    for (let i = 0; i < LIMIT - 2; i++) expect((await get(base, `Bearer ${client.apiKey}`)).status).toBe(200);
    const { apiKey } = await t.call<{ apiKey: string }>("clients.rotateKey", { id: client.id });
    expect((await get(base, `Bearer ${apiKey}`)).status).toBe(200);
    expect((await get(base, `Bearer ${apiKey}`)).status).toBe(200);
    await expectRateLimited(await get(base, `Bearer ${apiKey}`), "default");
  });
});

/** Calls of clients.authenticate this process's brokers ran, from the action metrics. */
async function authenticateCalls(): Promise<number> {
  const metric = await registry.getSingleMetric("action_duration_seconds")!.get();
  return (metric.values as { metricName?: string; labels: Record<string, unknown>; value: number }[])
    .filter((v) => v.metricName === "action_duration_seconds_count" && v.labels.action === "clients.authenticate")
    .reduce((sum, v) => sum + v.value, 0);
}

describe("throttling failed authentication", () => {
  const FAILURES = 5;
  let t: TestBroker;
  let base: string;
  // Every test request comes from 127.0.0.1: trusting it as a proxy lets each test speak from addresses of its own.
  let nextAddress = 1;
  const newAddress = () => `198.51.100.${nextAddress++}`;
  const from = (address: string) => ({ "x-forwarded-for": address });
  const badKey = fc
    .string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789"), minLength: 24, maxLength: 40 })
    .map((s) => `oik_${s}`);

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["gateway", "clients"],
      env: { ADMIN_API_KEY: ADMIN_KEY, AUTH_FAILURES_PER_MINUTE: String(FAILURES), TRUST_PROXY: "127.0.0.1,::1" },
    });
    base = baseUrlOf(t);
  });
  afterAll(() => t?.stop());

  it("when one address presents too many bad keys, then it gets 429 with Retry-After before any key lookup, while a valid key from it is served", async () => {
    const address = newAddress();
    const keys = fc.sample(badKey, FAILURES + 1);
    const before = await authenticateCalls();
    for (const [i, key] of keys.slice(0, FAILURES).entries()) {
      const res = await get(base, `Bearer ${key}`, from(address));
      expect(res.status).toBe(401);
      expect(res.headers.get("ratelimit-policy")).toBe(`"auth-failures";q=${FAILURES};w=60`);
      expect(res.headers.get("ratelimit")).toMatch(new RegExp(`^"auth-failures";r=${FAILURES - 1 - i};t=\\d+$`));
    }
    expect(await authenticateCalls()).toBe(before + FAILURES);

    await expectRateLimited(await get(base, `Bearer ${keys[FAILURES]}`, from(address)), "auth-failures");
    expect(await authenticateCalls()).toBe(before + FAILURES);
    // Issue 20: what others failed from an address never locks a valid key out of it.
    const valid = await newClient(t);
    expect((await get(base, `Bearer ${valid.apiKey}`, from(address))).status).toBe(200);
    expect(await authenticateCalls()).toBe(before + FAILURES + 1);

    // Another address is not affected.
    expect((await get(base, `Bearer ${valid.apiKey}`, from(newAddress()))).status).toBe(200);
  });

  it("when one key is tried from many addresses, then its prefix is throttled too, before any lookup", async () => {
    const key = fc.sample(badKey, 1)[0];
    const before = await authenticateCalls();
    for (let i = 0; i < FAILURES; i++) expect((await get(base, `Bearer ${key}`, from(newAddress()))).status).toBe(401);
    const again = await get(base, `Bearer ${key}`, from(newAddress()));
    await expectRateLimited(again, "auth-failures");
    expect(await authenticateCalls()).toBe(before + FAILURES);
  });

  it("when keys starting like a valid key fail from many addresses, then that prefix is throttled, and the valid key itself is still served", async () => {
    const valid = await newClient(t);
    const prefix = valid.apiKey.slice(0, KEY_PREFIX_LENGTH);
    for (const rest of fc.sample(badKey, FAILURES))
      expect((await get(base, `Bearer ${prefix}${rest}`, from(newAddress()))).status).toBe(401);
    const [rest] = fc.sample(badKey, 1);
    await expectRateLimited(await get(base, `Bearer ${prefix}${rest}`, from(newAddress())), "auth-failures");
    expect((await get(base, `Bearer ${valid.apiKey}`, from(newAddress()))).status).toBe(200);
  });

  it("when requests carry no key or a malformed header, then they count as failures too", async () => {
    const address = newAddress();
    for (let i = 0; i < FAILURES; i++)
      expect((await get(base, i % 2 ? null : "Basic abc", from(address))).status).toBe(401);
    expect((await get(base, null, from(address))).status).toBe(429);
  });

  it("when authentications succeed, then they do not count: only the bad keys do", async () => {
    const address = newAddress();
    const valid = await newClient(t);
    const [bad] = fc.sample(badKey, 1);
    for (let i = 0; i < 3 * FAILURES; i++)
      expect((await get(base, `Bearer ${valid.apiKey}`, from(address))).status).toBe(200);
    for (let i = 0; i < FAILURES; i++) expect((await get(base, `Bearer ${bad}${i}`, from(address))).status).toBe(401);
    expect((await get(base, `Bearer ${bad}${FAILURES}`, from(address))).status).toBe(429);
    expect((await get(base, `Bearer ${valid.apiKey}`, from(address))).status).toBe(200);
  });
});
