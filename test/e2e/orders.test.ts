/**
 * Orders over HTTP: the gateway and every service in its own process over NATS, with two
 * `orders` processes sharing the work.
 */
import type { Order } from "../../services/orders/orders.representation";
import type { ApiClient } from "../helpers/http";
import { startClusterWorld, type Cluster } from "../helpers/cluster";
import { partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { sampleTotalsByProcess } from "../helpers/process-metrics";

let cluster: Cluster;
let admin: ApiClient;
let partner: ApiClient;
let backoffice: ApiClient;
let world: ApiWorld;

beforeAll(async () => {
  ({ cluster, admin, world, partner, backoffice } = await startClusterWorld({ replicas: { orders: 2 } }));
}, 180_000);
afterAll(() => cluster?.stop());

async function inBatches<T>(count: number, size: number, run: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += size) {
    results.push(
      ...(await Promise.all(Array.from({ length: Math.min(size, count - start) }, (_, k) => run(start + k)))),
    );
  }
  return results;
}

/** How many orders each process that runs the orders service has created so far. */
function ordersCreatedByEachProcess(): Promise<Record<string, number>> {
  // The embedded fallback (no NATS) has one process, "gateway", running every service.
  const ordersProcesses = cluster.processes.get(cluster.distributed ? "orders" : "gateway")!;
  return sampleTotalsByProcess(ordersProcesses, "action_duration_seconds_count", {
    action: "orders.create",
    outcome: "ok",
  });
}

describe("when 200 orders are created at once, two orders processes sharing them (distributed mode)", () => {
  it("then every one is 201 with its own code, and each orders process created some of them", async () => {
    const before = await ordersCreatedByEachProcess();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        partner.post<Order>("/api/v1/orders", partnerOrderBody(world, { externalId: `burst-${i}` })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(200).fill(201));
    const codes = answers.map((a) => a.body.code);
    expect(new Set(codes).size).toBe(200);
    for (const code of codes) expect(code).toMatch(/^ORD-\d{8}-\d{6}$/);

    const after = await ordersCreatedByEachProcess();
    const share = Object.entries(after).map(([name, total]) => ({ name, created: total - before[name] }));
    expect(share).toHaveLength(cluster.distributed ? 2 : 1);
    expect(share.filter((p) => p.created === 0)).toEqual([]);
    expect(share.reduce((sum, p) => sum + p.created, 0)).toBe(200);
  });
});

describe("when a partner creates an order over HTTP", () => {
  it("then it is 201 with Location, readable there, and validated by the back office", async () => {
    const created = await partner.post<Order>("/api/v1/orders", partnerOrderBody(world), {
      "X-Request-Id": "e2e-order-1",
    });
    expect(created.status).toBe(201);
    expect(created.headers["x-request-id"]).toBe("e2e-order-1");
    expect(created.headers.location).toBe(`/api/v1/orders/${created.body.id}`);
    const read = await partner.get<Order>(created.headers.location);
    expect(read.body).toEqual(created.body);
    const validated = await backoffice.post<Order>(`/api/v1/orders/${created.body.id}/validate`);
    expect([validated.status, validated.body.status]).toEqual([200, "validated"]);
    const again = await backoffice.post(`/api/v1/orders/${created.body.id}/validate`);
    expect(again.status).toBe(409);
  });

  it("then the same Idempotency-Key replays the first answer, and another body with it is 422", async () => {
    const body = partnerOrderBody(world, { externalReference: "IDEM-E2E" });
    const first = await partner.post<Order>("/api/v1/orders", body, { "Idempotency-Key": "e2e-key-1" });
    const replay = await partner.post<Order>("/api/v1/orders", body, { "Idempotency-Key": "e2e-key-1" });
    expect([first.status, replay.status]).toEqual([201, 201]);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.location).toBe(first.headers.location);
    expect([first.headers["idempotent-replayed"], replay.headers["idempotent-replayed"]]).toEqual([undefined, "true"]);
    const other = await partner.post<{ type: string }>(
      "/api/v1/orders",
      { ...body, externalReference: "X" },
      { "Idempotency-Key": "e2e-key-1" },
    );
    expect([other.status, other.body.type]).toEqual([422, "/problems/idempotency-key-reused"]);
  });

  it("then a duplicate externalId is 409 naming the first order", async () => {
    const first = await partner.post<Order>("/api/v1/orders", partnerOrderBody(world, { externalId: "DUP-E2E" }));
    const second = await partner.post<{ existingOrderId: number }>(
      "/api/v1/orders",
      partnerOrderBody(world, { externalId: "DUP-E2E" }),
    );
    expect(second.status).toBe(409);
    expect(second.body.existingOrderId).toBe(first.body.id);
  });

  it("then bad input gets the right problem: malformed JSON 400, over 1 MiB 413, unknown field 422 by path", async () => {
    const malformed = await partner.request({
      method: "POST",
      path: "/api/v1/orders",
      rawBody: '{"contact": {',
      headers: { "Content-Type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    const huge = await partner.request({
      method: "POST",
      path: "/api/v1/orders",
      rawBody: JSON.stringify({ pad: "x".repeat(1_100_000) }),
      headers: { "Content-Type": "application/json" },
    });
    expect(huge.status).toBe(413);
    const unknown = await partner.post<{ errors: { path: string }[] }>("/api/v1/orders", {
      ...partnerOrderBody(world),
      items: [{ externalReferenceId: world.packagingRefs[0], orderedQuantity: 1, colour: "red" }],
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors.map((e) => e.path)).toEqual(["items[0].colour"]);
  });

  it("then another partner cannot see it", async () => {
    const created = await partner.post<Order>("/api/v1/orders", partnerOrderBody(world));
    expect((await admin.as(world.otherPartnerKey).get(`/api/v1/orders/${created.body.id}`)).status).toBe(404);
  });
});

describe("when an order is read and changed with its version, across processes (two orders processes)", () => {
  it("then GET's ETag makes If-None-Match 304, and of a validate and a cancel sent at once with the same If-Match one is made and the other is 412", async () => {
    const created = await partner.post<Order>("/api/v1/orders", partnerOrderBody(world));
    const path = `/api/v1/orders/${created.body.id}`;
    const read = await partner.get<Order>(path);
    expect([read.headers.etag, read.body.version]).toEqual(['"1"', 1]);
    const unchanged = await partner.get(path, { "If-None-Match": read.headers.etag });
    expect([unchanged.status, unchanged.headers.etag, unchanged.body]).toEqual([304, '"1"', ""]);

    const pair = await Promise.all(
      ["validate", "cancel"].map((move) => backoffice.post<Order>(`${path}/${move}`, undefined, { "If-Match": '"1"' })),
    );
    expect(pair.map((a) => a.status).sort()).toEqual([200, 412]);
    const made = pair.find((a) => a.status === 200)!;
    const refused = pair.find((a) => a.status === 412)! as unknown as { body: { currentVersion: number } };
    expect([made.headers.etag, refused.body.currentVersion]).toEqual(['"2"', 2]);
    const after = await partner.get<Order>(path, { "If-None-Match": '"1"' });
    expect([after.status, after.headers.etag, after.body.status]).toEqual([200, '"2"', made.body.status]);
  });
});

describe("when a list holds 1,000 records", () => {
  it("then following the Link headers visits each exactly once, in order", async () => {
    const ids = await inBatches(
      1000,
      25,
      async (i) => (await admin.post<{ id: number }>("/api/v1/customers", { name: `Paging customer ${i}` })).body.id,
    );
    const seen: number[] = [];
    let next: string | null = "/api/v1/customers?limit=37";
    let pages = 0;
    while (next) {
      const page: { status: number; headers: Record<string, string>; body: { id: number }[] } =
        await backoffice.get<{ id: number }[]>(next);
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(37);
      seen.push(...page.body.map((c) => c.id));
      const link: string | undefined = page.headers.link;
      next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : null;
      pages += 1;
    }
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect(pages).toBe(Math.ceil(seen.length / 37));
  });

  it("then a limit over 500 or a forged cursor is a 422 naming it", async () => {
    const tooMany = await backoffice.get<{ errors: { path: string }[] }>("/api/v1/customers?limit=501");
    expect([tooMany.status, tooMany.body.errors[0].path]).toEqual([422, "limit"]);
    const forged = await backoffice.get<{ errors: { path: string }[] }>("/api/v1/customers?cursor=bm9wZQ");
    expect([forged.status, forged.body.errors[0].path]).toEqual([422, "cursor"]);
  });
});
