import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startTestBroker, type TestBroker } from "../helpers/broker";

const ADMIN_KEY = "rate-limit-admin-key-0123456789";
const LIMIT = 3;

describe("rate limiting per API key", () => {
  let t: TestBroker;
  let base: string;

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["gateway", "clients"],
      env: { ADMIN_API_KEY: ADMIN_KEY, RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    });
    const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => t?.stop());

  const asKey = (key: string, path = "/api/v1/clients", init: RequestInit = {}) =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });

  it("when a key makes more requests than the limit in a minute, then the next is a 429 problem with Retry-After, and other keys and probes still pass", async () => {
    // The admin's first request creates a second client with a key of its own.
    const created = await asKey(ADMIN_KEY, "/api/v1/clients", { method: "POST", body: JSON.stringify({ name: "other", kind: "admin" }) });
    expect(created.status).toBe(201);
    const otherKey = ((await created.json()) as { apiKey: string }).apiKey;

    const statuses: number[] = [];
    for (let i = 1; i < LIMIT; i++) statuses.push((await asKey(ADMIN_KEY)).status);
    expect(statuses).toEqual(Array(LIMIT - 1).fill(200));

    const limited = await asKey(ADMIN_KEY);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get("x-rate-limit-remaining")).toBe("0");
    expect(limited.headers.get("x-request-id")).toBeTruthy();
    expect(await limited.json()).toMatchObject({ type: "/problems/rate-limited", status: 429, title: "Too many requests" });

    expect((await asKey(otherKey)).status).toBe(200);
    for (let i = 0; i <= LIMIT; i++) expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
