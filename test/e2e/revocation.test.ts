/**
 * Authorization at the moment of use, across processes: the gateway, clients, orders and
 * webhooks each in its own process over NATS (test/helpers/cluster.ts). Revoking a client or
 * taking a scope or an event away holds within 2 s on the gateway, and what happens afterwards
 * is never delivered to its webhooks. The measured delays are printed.
 */
import { startCluster, type Cluster } from "../helpers/cluster";
import { createApiWorld, type ApiWorld } from "../helpers/api-fixtures";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { ADDRESS } from "../helpers/fixtures";
import { api, type ApiClient } from "../helpers/http";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(120_000);

/** The bound the issue sets for a change to hold everywhere. */
const TWO_SECONDS = 2_000;

interface ClientJson {
  id: number;
  apiKey: string;
}

let cluster: Cluster;
let admin: ApiClient;
let world: ApiWorld;
let receiver: WebhookReceiver;

beforeAll(async () => {
  // A failed attempt waits an hour: a queued delivery stays queued while the test looks at it,
  // and only the change under test can cancel it (the retry's own re-check never comes).
  cluster = await startCluster({ env: { WEBHOOK_RETRY_SCHEDULE: "3600,3600", WEBHOOK_DISPATCH_INTERVAL_MS: "100" } });
  admin = api(cluster.baseUrl).as(cluster.adminKey);
  world = await createApiWorld(admin);
  receiver = await startReceiver((r) => (r.path.startsWith("/failing") ? 500 : 200));
});
afterAll(async () => {
  await receiver?.close();
  await cluster?.stop();
});

let n = 0;
async function newClient(kind: string): Promise<ClientJson & { as: ApiClient }> {
  const res = await admin.post<ClientJson>("/api/v1/clients", {
    name: `${kind} revocation ${n++} ${Date.now()}`,
    kind,
  });
  expect(res.status).toBe(201);
  return { ...res.body, as: admin.as(res.body.apiKey) };
}

const patchClient = (id: number, body: unknown) =>
  admin.request({ method: "PATCH", path: `/api/v1/clients/${id}`, body });

/** Polls until `request` answers `status`; the delay since `since`, or a failure after `giveUpMs`. */
async function answersWithin(
  request: () => Promise<{ status: number }>,
  status: number,
  since: number,
  giveUpMs = 2 * TWO_SECONDS,
): Promise<number> {
  for (;;) {
    const got = (await request()).status;
    const delay = Date.now() - since;
    if (got === status) return delay;
    if (delay > giveUpMs) throw new Error(`still ${got} after ${delay} ms, expected ${status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function subscribe(client: { as: ApiClient }, event: string, path: string): Promise<number> {
  const res = await client.as.put<{ id: number }>("/api/v1/webhooks", { event, url: `${receiver.url}${path}` });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function orderBy(client: { as: ApiClient }): Promise<number> {
  const res = await client.as.post<{ id: number }>("/api/v1/orders", {
    contact: { id: world.contactId },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: [{ packaging: world.packagingIds[0], orderedQuantity: 1 }],
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const ordersOn = (path: string) =>
  receiver.received.filter((r) => r.path === path).map((r) => (JSON.parse(r.body) as { id: number }).id);
const arrived = (path: string, orderId: number) =>
  receiver.waitFor(
    () => ordersOn(path).includes(orderId),
    30_000,
    () => `order ${orderId} not on ${path}`,
  );

describe("revocation and lost grants across processes", () => {
  it("when a scope is removed and then the client revoked, then its key answers 403, then 401, within 2 s on the gateway", async () => {
    const client = await newClient("backoffice");
    const listWebhooks = () => client.as.get("/api/v1/webhooks");
    expect((await listWebhooks()).status).toBe(200);

    const patched = Date.now();
    expect((await patchClient(client.id, { scopes: ["crm", "catalogue"] })).status).toBe(200);
    const forbiddenAfter = await answersWithin(listWebhooks, 403, patched);

    const revoked = Date.now();
    expect((await admin.delete(`/api/v1/clients/${client.id}`)).status).toBe(200);
    const unauthenticatedAfter = await answersWithin(() => client.as.get("/api/v1/contacts"), 401, revoked);

    console.log(
      `[e2e revocation] ${cluster.distributed ? "distributed" : "embedded"}: scope removed → 403 after ${forbiddenAfter} ms; revoked → 401 after ${unauthenticatedAfter} ms`,
    );
    expect(forbiddenAfter).toBeLessThanOrEqual(TWO_SECONDS);
    expect(unauthenticatedAfter).toBeLessThanOrEqual(TWO_SECONDS);
  });

  it("when a client is revoked, then no webhook is delivered for what happens to its orders afterwards, while the back office still hears it", async () => {
    const client = await newClient("backoffice");
    const backOffice = await newClient("backoffice");
    await subscribe(client, "sales_order_created", "/revoked/created");
    await subscribe(client, "sales_order_validated", "/revoked/validated");
    await subscribe(backOffice, "sales_order_validated", "/back-office/validated");

    const orderId = await orderBy(client);
    await arrived("/revoked/created", orderId);

    expect((await admin.delete(`/api/v1/clients/${client.id}`)).status).toBe(200);
    expect((await admin.post(`/api/v1/orders/${orderId}/validate`)).status).toBe(200);
    // The back office's copy proves the event was fanned out; the revoked client's would be beside it.
    await arrived("/back-office/validated", orderId);
    expect(ordersOn("/revoked/validated")).toEqual([]);
  });

  it("when a client loses an event, then its queued deliveries of it are cancelled, kept in its log, and never sent again", async () => {
    const client = await newClient("backoffice");
    const subscription = await subscribe(client, "sales_order_created", "/failing/lost-event");
    const orderId = await orderBy(client);
    await arrived("/failing/lost-event", orderId);

    const patched = Date.now();
    expect(
      (await patchClient(client.id, { webhookEvents: ["sales_order_validated", "sales_order_cancelled"] })).status,
    ).toBe(200);
    const cancelled = () =>
      client.as.get<{ webhookId: string }[]>(`/api/v1/webhooks/${subscription}/deliveries?status=cancelled`);
    // Background work, not a bound of the product: a loaded machine may take its time
    // (test/helpers/deadlines.ts); the first attempt's outcome may even be written after the
    // PATCH's re-check ran, and is re-checked then (webhooks.late-changes.ts).
    const delay = await answersWithin(
      async () => ({ status: (await cancelled()).body.length === 1 ? 299 : 0 }),
      299,
      patched,
      EVENTUALLY_MS,
    );
    console.log(`[e2e revocation] queued delivery cancelled ${delay} ms after the PATCH was sent`);

    // Redelivered by hand: the dispatcher re-checks the grants and cancels it again, unsent.
    const [delivery] = (await client.as.get<{ id: number }[]>(`/api/v1/webhooks/${subscription}/deliveries`)).body;
    expect((await client.as.post(`/api/v1/webhooks/${subscription}/deliveries/${delivery.id}/redeliver`)).status).toBe(
      202,
    );
    await answersWithin(
      async () => ({ status: (await cancelled()).body.length === 1 ? 299 : 0 }),
      299,
      Date.now(),
      EVENTUALLY_MS,
    );
    expect(ordersOn("/failing/lost-event")).toEqual([orderId]);
  });
});
