/**
 * A valid key is never locked out by what others failed (issue 20): over real sockets, every
 * request from one address (127.0.0.1, no proxy believed), a thousand bad keys — some starting
 * like the valid key, so that its key prefix is throttled too — and then the valid key, which is
 * served. The bad keys stay cheap: past the throttle none is looked up, and the list of active
 * keys is loaded a bounded number of times, not once per key.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { KEY_PREFIX_LENGTH } from "../../gateway/auth-throttle";
import { MIN_RELOAD_MS } from "../../gateway/active-keys";
import { registry } from "../../shared/observability/metrics";
import { startTestBroker, type TestBroker } from "../helpers/broker";

const ADMIN_KEY = "lockout-admin-key-0123456789abcdef";
const FAILURES = 20;
const BAD_KEYS = 1_000;
const RATE_LIMIT = 5_000;

let t: TestBroker;
let base: string;

beforeAll(async () => {
  t = await startTestBroker({
    services: ["gateway", "clients"],
    env: {
      ADMIN_API_KEY: ADMIN_KEY,
      AUTH_FAILURES_PER_MINUTE: String(FAILURES),
      RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      TRUST_PROXY: "",
    },
  });
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);
afterAll(() => t?.stop());

/** How many times this process's brokers ran an action, from the action metrics. */
async function callsOf(action: string): Promise<number> {
  const metric = await registry.getSingleMetric("action_duration_seconds")!.get();
  return (metric.values as { metricName?: string; labels: Record<string, unknown>; value: number }[])
    .filter((v) => v.metricName === "action_duration_seconds_count" && v.labels.action === action)
    .reduce((sum, v) => sum + v.value, 0);
}

const get = (key: string) => fetch(`${base}/api/v1/clients?limit=1`, { headers: { authorization: `Bearer ${key}` } });

const tail = fc.string({
  unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"),
  minLength: 20,
  maxLength: 43,
});

it("when one address sends a thousand bad keys, some with a valid key's prefix, then that valid key is still served under its own client's rate limit, and no bad key past the throttle is looked up", async () => {
  const valid = await t.call<{ apiKey: string }>("clients.create", { name: "Shared office", kind: "admin" });
  const prefix = valid.apiKey.slice(0, KEY_PREFIX_LENGTH);
  // The first failures start like the valid key, so its prefix is blocked as well as the address;
  // after them, every third key still does.
  const badKeys = fc.sample(tail, BAD_KEYS).map((rest, i) => (i < FAILURES || i % 3 === 0 ? prefix : "oik_") + rest);
  const authenticationsBefore = await callsOf("clients.authenticate");
  const listLoadsBefore = await callsOf("clients.activeKeyLookups");
  const started = Date.now();

  const statuses = new Map<number, number>();
  for (const key of badKeys) {
    const status = (await get(key)).status;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  expect(Object.fromEntries(statuses)).toEqual({ 401: FAILURES, 429: BAD_KEYS - FAILURES });

  const served = await get(valid.apiKey);
  expect(served.status).toBe(200);
  expect(served.headers.get("ratelimit-policy")).toBe(`"default";q=${RATE_LIMIT};w=60`);
  expect(served.headers.get("ratelimit")).toMatch(new RegExp(`^"default";r=${RATE_LIMIT - 1};t=\\d+$`));

  // The source is still blocked for what it does not hold.
  expect((await get(badKeys[0])).status).toBe(429);
  expect((await get(`${prefix}${fc.sample(tail, 1)[0]}`)).status).toBe(429);

  expect(await callsOf("clients.authenticate")).toBe(authenticationsBefore + FAILURES + 1);
  const loads = (await callsOf("clients.activeKeyLookups")) - listLoadsBefore;
  expect(loads).toBeGreaterThanOrEqual(1);
  expect(loads).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / MIN_RELOAD_MS) + 1);
}, 60_000);

it("when a client's keys are rotated while its address is blocked, then the old key is refused and the new one is served", async () => {
  const client = await t.call<{ id: number; apiKey: string }>("clients.create", { name: "Rotating", kind: "admin" });
  // The address is blocked by the test above (the minute has not ended).
  expect((await get(fc.sample(tail, 1)[0])).status).toBe(429);
  expect((await get(client.apiKey)).status).toBe(200);
  const { apiKey } = await t.call<{ apiKey: string }>("clients.rotateKey", { id: client.id });
  // The clients.changed broadcast drops the gateway's list and principals at once.
  expect([401, 429]).toContain((await get(client.apiKey)).status);
  expect((await get(apiKey)).status).toBe(200);
});
