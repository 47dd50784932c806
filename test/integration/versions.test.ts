/**
 * Versions and conditional requests over HTTP, through the real gateway and services in one
 * broker (docs/api.md, "Versions and conditional requests"): ETag and 304 on reads, If-Match and
 * 412 on changes — atomic with the change, so two changes naming one version make one change —
 * and the version carried by the webhook of each change. Every answer is checked against the
 * OpenAPI document the gateway serves (test/helpers/http.ts).
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Knex } from "knex";
import type { Order } from "../../services/orders/orders.representation";
import type { ContactReference } from "../../services/references/references.representation";
import { openDatabase } from "../../shared/database/db";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { api, type ApiClient } from "../helpers/http";
import { createApiWorld, partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const ADMIN_KEY = "versions-admin-key-0123456789abcdef";

let t: TestBroker;
let db: Knex;
let world: ApiWorld;
let partner: ApiClient;
let backoffice: ApiClient;
let receiver: WebhookReceiver;
let seq = 0;

beforeAll(async () => {
  t = await startTestBroker({
    services: ["gateway", "clients", "crm", "catalogue", "references", "orders", "webhooks"],
    env: { ADMIN_API_KEY: ADMIN_KEY, WEBHOOK_DISPATCH_INTERVAL_MS: "50", OUTBOX_RELAY_INTERVAL_MS: "50" },
  });
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  const admin = api(`http://127.0.0.1:${(server.address() as AddressInfo).port}`).as(ADMIN_KEY);
  world = await createApiWorld(admin);
  partner = admin.as(world.partnerKey);
  backoffice = admin.as(world.backofficeKey);
  db = openDatabase(t.database.url);
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await db?.destroy();
  await t?.stop();
});

async function newOrder(): Promise<Order> {
  const created = await partner.post<Order>("/api/v1/orders", partnerOrderBody(world, { externalId: `v-${++seq}` }));
  expect(created.status).toBe(201);
  return created.body;
}

const eventsOf = async (orderId: number): Promise<string[]> =>
  (await db.withSchema("orders").table("outbox").where({ entity_id: orderId }).orderBy("id").select("event")).map(
    (r: { event: string }) => r.event,
  );

describe("when an order is read", () => {
  it('then it is version 1 with ETag "1", and If-None-Match naming it (strong, weak or in a list) is 304 with the ETag and no body', async () => {
    const order = await newOrder();
    expect(order.version).toBe(1);
    const read = await partner.get<Order>(`/api/v1/orders/${order.id}`);
    expect([read.status, read.headers.etag, read.body]).toEqual([200, '"1"', order]);
    for (const tags of ['"1"', 'W/"1"', '"7", "1"', "*"]) {
      const again = await partner.get(`/api/v1/orders/${order.id}`, { "If-None-Match": tags });
      expect([tags, again.status, again.headers.etag, again.body]).toEqual([tags, 304, '"1"', ""]);
    }
    const head = await partner.request({
      method: "HEAD",
      path: `/api/v1/orders/${order.id}`,
      headers: { "If-None-Match": '"1"' },
    });
    expect([head.status, head.headers.etag]).toEqual([304, '"1"']);
  });

  it("then If-None-Match naming an older version is 200 with the order", async () => {
    const order = await newOrder();
    const read = await partner.get<Order>(`/api/v1/orders/${order.id}`, { "If-None-Match": '"0", W/"2"' });
    expect([read.status, read.headers.etag, read.body.id]).toEqual([200, '"1"', order.id]);
  });

  it("then a malformed If-None-Match is 400 naming the header", async () => {
    const order = await newOrder();
    const read = await partner.get<{ errors: unknown }>(`/api/v1/orders/${order.id}`, { "If-None-Match": "1" });
    expect(read.status).toBe(400);
    expect(read.body.errors).toEqual([{ path: "If-None-Match", message: expect.any(String) }]);
  });
});

describe("when an order is changed with If-Match", () => {
  it('then naming the current version makes the change, version 2 with ETag "2"; naming the old one afterwards is 412 with currentVersion and changes nothing', async () => {
    const order = await newOrder();
    const validated = await backoffice.post<Order>(`/api/v1/orders/${order.id}/validate`, undefined, {
      "If-Match": '"1"',
    });
    expect([validated.status, validated.body.status, validated.body.version, validated.headers.etag]).toEqual([
      200,
      "validated",
      2,
      '"2"',
    ]);
    const stale = await backoffice.post<{ type: string; currentVersion: number }>(
      `/api/v1/orders/${order.id}/cancel`,
      undefined,
      { "If-Match": '"1"' },
    );
    expect([stale.status, stale.body.type, stale.body.currentVersion]).toEqual([
      412,
      "/problems/precondition-failed",
      2,
    ]);
    const read = await partner.get<Order>(`/api/v1/orders/${order.id}`);
    expect([read.headers.etag, read.body.status, read.body.version]).toEqual(['"2"', "validated", 2]);
    expect(await eventsOf(order.id)).toEqual(["sales_order_created", "sales_order_validated"]);
  });

  it("then a weak tag never matches (strong comparison), and a stale version comes before a move that is not allowed", async () => {
    const order = await newOrder();
    const weak = await backoffice.post(`/api/v1/orders/${order.id}/validate`, undefined, { "If-Match": 'W/"1"' });
    expect(weak.status).toBe(412);
    await backoffice.post(`/api/v1/orders/${order.id}/cancel`);
    const both = await backoffice.post<{ currentVersion: number }>(`/api/v1/orders/${order.id}/validate`, undefined, {
      "If-Match": '"1"',
    });
    expect([both.status, both.body.currentVersion]).toEqual([412, 2]);
    const notAllowed = await backoffice.post(`/api/v1/orders/${order.id}/validate`, undefined, { "If-Match": '"2"' });
    expect(notAllowed.status).toBe(409);
  });

  it("then a malformed If-Match is 400 naming the header, and nothing is changed", async () => {
    const order = await newOrder();
    const refused = await backoffice.post<{ errors: unknown }>(`/api/v1/orders/${order.id}/validate`, undefined, {
      "If-Match": "1",
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ path: "If-Match", message: expect.any(String) }]);
    expect(await eventsOf(order.id)).toEqual(["sales_order_created"]);
  });

  it("then of two changes sent at once with the same If-Match, one is made and the other is 412 — for ten orders", async () => {
    const orders = await Promise.all(Array.from({ length: 10 }, () => newOrder()));
    const answers = await Promise.all(
      orders.map((o) =>
        Promise.all([
          backoffice.post<Order>(`/api/v1/orders/${o.id}/validate`, undefined, { "If-Match": '"1"' }),
          backoffice.post<Order>(`/api/v1/orders/${o.id}/cancel`, undefined, { "If-Match": '"1"' }),
        ]),
      ),
    );
    for (const [i, pair] of answers.entries()) {
      expect(pair.map((a) => a.status).sort()).toEqual([200, 412]);
      const made = pair.find((a) => a.status === 200)!;
      const read = await partner.get<Order>(`/api/v1/orders/${orders[i].id}`);
      expect([read.body.status, read.body.version]).toEqual([made.body.status, 2]);
      expect(await eventsOf(orders[i].id)).toEqual(["sales_order_created", `sales_order_${made.body.status}`]);
    }
  });

  it("then two validations sent at once with the same If-Match give one 200 and one 412", async () => {
    const order = await newOrder();
    const pair = await Promise.all(
      [1, 2].map(() => backoffice.post(`/api/v1/orders/${order.id}/validate`, undefined, { "If-Match": '"1"' })),
    );
    expect(pair.map((a) => a.status).sort()).toEqual([200, 412]);
    expect(await eventsOf(order.id)).toEqual(["sales_order_created", "sales_order_validated"]);
  });
});

describe("when an order changes and a webhook carries it", () => {
  it("then the sales_order_validated body is version 2, the version GET's ETag names", async () => {
    const subscribed = await backoffice.put("/api/v1/webhooks", {
      event: "sales_order_validated",
      url: `${receiver.url}/validated`,
    });
    expect([200, 201]).toContain(subscribed.status);
    const order = await newOrder();
    await backoffice.post(`/api/v1/orders/${order.id}/validate`, undefined, { "If-Match": '"1"' });
    const mine = () =>
      receiver.received.filter(
        (r) => r.path === "/validated" && (JSON.parse(r.body) as { id: number }).id === order.id,
      );
    await receiver.waitFor(() => mine().length === 1, EVENTUALLY_MS);
    const body = JSON.parse(mine()[0].body) as Order;
    const read = await partner.get<Order>(`/api/v1/orders/${order.id}`);
    expect(body.version).toBe(2);
    expect(read.headers.etag).toBe(`"${body.version}"`);
    expect(body).toEqual(read.body);
  });
});

describe("when a create is sent with If-None-Match: *", () => {
  it("then the order is 201 with its body (moleculer-web's own freshness check once answered 304 to it)", async () => {
    const created = await partner.post<Order>(
      "/api/v1/orders",
      partnerOrderBody(world, { externalId: `v-star-${++seq}` }),
      { "If-None-Match": "*" },
    );
    expect([created.status, created.headers.etag, created.body.version]).toEqual([201, '"1"', 1]);
  });
});

describe("when a contact reference is read and registered again", () => {
  const body = (externalReference: string, firstName: string) => ({
    contact: { externalReference, firstName, lastName: "Johnson", email: `kj-${externalReference}@nasa.test` },
    customer: { name: `NASA ${externalReference}` },
  });

  it("then it has ETag and 304 like an order, If-Match makes a change once and a stale one is 412 with nothing changed", async () => {
    const code = `KJ-${++seq}`;
    const created = await partner.post<ContactReference>("/api/v1/contact_references", body(code, "Katherine"));
    expect([created.status, created.body.version, created.headers.etag]).toEqual([201, 1, '"1"']);
    const path = `/api/v1/contact_references/${created.body.id}`;
    const read = await partner.get<ContactReference>(path);
    expect([read.headers.etag, read.body]).toEqual(['"1"', created.body]);
    expect((await partner.get(path, { "If-None-Match": '"1"' })).status).toBe(304);

    const changed = await partner.post<ContactReference>("/api/v1/contact_references", body(code, "Kathy"), {
      "If-Match": '"1"',
    });
    expect([changed.status, changed.body.version, changed.headers.etag, changed.body.contact.firstName]).toEqual([
      200,
      2,
      '"2"',
      "Kathy",
    ]);
    const stale = await partner.post<{ currentVersion: number }>("/api/v1/contact_references", body(code, "K."), {
      "If-Match": '"1"',
    });
    expect([stale.status, stale.body.currentVersion]).toEqual([412, 2]);
    const after = await partner.get<ContactReference>(path);
    expect([after.headers.etag, after.body.contact.firstName]).toEqual(['"2"', "Kathy"]);
  });

  it("then If-None-Match: * registers only a new reference, and If-Match on a new one is 412 with currentVersion null", async () => {
    const code = `KJ-${++seq}`;
    const unknown = await partner.post<{ currentVersion: unknown }>("/api/v1/contact_references", body(code, "A"), {
      "If-Match": "*",
    });
    expect([unknown.status, unknown.body.currentVersion]).toEqual([412, null]);
    const fresh = await partner.post("/api/v1/contact_references", body(code, "A"), { "If-None-Match": "*" });
    expect(fresh.status).toBe(201);
    const again = await partner.post<{ currentVersion: number }>("/api/v1/contact_references", body(code, "B"), {
      "If-None-Match": "*",
    });
    expect([again.status, again.body.currentVersion]).toEqual([412, 1]);
  });

  it("then two registrations sent at once with the same If-Match give one 200 and one 412 — for eight references", async () => {
    const codes = Array.from({ length: 8 }, () => `KJ-${++seq}`);
    await Promise.all(codes.map((code) => partner.post("/api/v1/contact_references", body(code, "A"))));
    const pairs = await Promise.all(
      codes.map((code) =>
        Promise.all(
          ["B", "C"].map((name) => partner.post("/api/v1/contact_references", body(code, name), { "If-Match": '"1"' })),
        ),
      ),
    );
    for (const pair of pairs) expect(pair.map((a) => a.status).sort()).toEqual([200, 412]);
  });
});
