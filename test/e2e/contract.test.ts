/**
 * The contract test: the embedded mode in a child process, every route of the API called at
 * least once through the contract-checking client (test/helpers/http.ts), which fails a test on
 * any answer the OpenAPI document does not allow — success or problem. The webhook requests the
 * service sends are checked against the document's `webhooks` too.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ProblemDocument } from "../../shared/http/problem";
import type { Packaging, Product } from "../../services/catalogue/catalogue.representation";
import type { Contact, Customer } from "../../services/crm/crm.representation";
import type { Order } from "../../services/orders/orders.representation";
import type { ContactReference, PackagingReference } from "../../services/references/references.representation";
import type {
  Delivery,
  Subscription,
  SubscriptionWithSecrets,
  WebhookEvent,
} from "../../services/webhooks/webhooks.representation";
import { startEmbedded, type EmbeddedProcess } from "../helpers/embedded-process";
import { ADDRESS } from "../helpers/fixtures";
import { api, type ApiClient } from "../helpers/http";
import { importEnded, importResults, ndjson, pathOf, uploadImport } from "../helpers/order-imports";

interface ClientWithKey {
  id: number;
  kind: string;
  scopes: string[];
  apiKey: string;
}

interface ReceivedWebhook {
  headers: Record<string, string>;
  body: unknown;
}

/** How long `/flaky` fails from its first request: longer than one retry (RETRY_SCHEDULE), shorter than two. */
const FLAKY_FOR_MS = 700;
const RETRY_SCHEDULE = "0.5,0.5,0.5,0.5";

/** A webhook receiver on loopback (the process runs with WEBHOOK_ALLOW_INSECURE_TARGETS=true). */
async function startReceiver(): Promise<{ url: string; received: ReceivedWebhook[]; close(): Promise<void> }> {
  const received: ReceivedWebhook[] = [];
  let flakySince: number | null = null;
  /**
   * A URL that is gone disables its subscription (webhook_endpoint_disabled); one that is down
   * exhausts its deliveries' schedule (webhook_delivery_exhausted); a flaky one fails for a while,
   * then recovers (webhook_endpoint_recovered).
   */
  const statusFor = (path: string) => {
    if (path.endsWith("/gone")) return 410;
    if (path.endsWith("/down")) return 500;
    if (!path.endsWith("/flaky")) return 204;
    flakySince ??= Date.now();
    return Date.now() - flakySince < FLAKY_FOR_MS ? 500 : 204;
  };
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString()));
    req.on("end", () => {
      received.push({ headers: req.headers as Record<string, string>, body: JSON.parse(text) as unknown });
      res.writeHead(statusFor(req.url ?? "/")).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function eventually<T>(
  what: string,
  probe: () => T | undefined,
  context: () => string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}. ${context()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("the API keeps its OpenAPI contract", () => {
  let server: EmbeddedProcess;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let anonymous: ApiClient;
  let admin: ApiClient;
  let backoffice: ApiClient;
  let partner: ApiClient;
  const tag = Date.now().toString(36);
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    receiver = await startReceiver();
    // A short schedule: a delivery to /down gives up, and one to /flaky recovers, within seconds.
    server = await startEmbedded({ WEBHOOK_ALLOW_INSECURE_TARGETS: "true", WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE });
    anonymous = api(server.baseUrl);
    admin = anonymous.as(server.adminKey);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  }, 30_000);

  it("when the document is fetched, then it is served without authentication", async () => {
    const { status, body } = await anonymous.get<{ openapi: string }>("/api/v1/openapi.json");
    expect(status).toBe(200);
    expect(body.openapi).toBe("3.1.0");
  });

  it("when the probes, the browser reference and the portal are fetched without a key, then each answers as the operations tag documents", async () => {
    for (const path of [
      "/healthz",
      "/readyz",
      "/docs",
      "/docs/init.js",
      "/docs/swagger-ui.css",
      "/portal",
      "/portal/portal.js",
      "/portal/portal.css",
    ]) {
      expect({ path, status: (await anonymous.get(path)).status }).toEqual({ path, status: 200 });
    }
    // /metrics is on the probe port (HEALTH_PORT), not on the public one, unless METRICS_ON_PUBLIC_PORT says so;
    // the document then does not list it, so it is asked outside the contract client.
    expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(404);
    expect((await anonymous.get("/docs/not-an-asset")).status).toBe(404);
    expect((await anonymous.get("/portal/not-an-asset")).status).toBe(404);
  });

  it("when the admin creates a back-office and a partner client, then each answers 201 with its key, and clients can be read", async () => {
    const created = await admin.post<ClientWithKey>("/api/v1/clients", {
      name: `backoffice ${tag}`,
      kind: "backoffice",
    });
    expect(created.status).toBe(201);
    expect(created.headers.location).toMatch(new RegExp(`/api/v1/clients/${created.body.id}$`));
    backoffice = anonymous.as(created.body.apiKey);

    const partnerClient = await admin.post<ClientWithKey>("/api/v1/clients", {
      name: `partner ${tag}`,
      kind: "partner",
    });
    expect(partnerClient.status).toBe(201);
    partner = anonymous.as(partnerClient.body.apiKey);
    ids.partner = partnerClient.body.id;

    expect((await admin.get(`/api/v1/clients?limit=1`)).status).toBe(200);
    expect((await admin.get(`/api/v1/clients/${ids.partner}`)).status).toBe(200);
  });

  it("when a client's key is rotated, it is changed and then revoked, then the answers keep the contract", async () => {
    const spare = await admin.post<ClientWithKey>("/api/v1/clients", { name: `spare ${tag}`, kind: "partner" });
    const changed = await admin.request<{ scopes: string[] }>({
      method: "PATCH",
      path: `/api/v1/clients/${spare.body.id}`,
      body: { scopes: ["partner"] },
    });
    expect([changed.status, changed.body.scopes]).toEqual([200, ["partner"]]);
    const rotated = await admin.post<ClientWithKey>(`/api/v1/clients/${spare.body.id}/rotate_key`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.apiKey).not.toBe(spare.body.apiKey);
    expect((await admin.delete(`/api/v1/clients/${spare.body.id}`)).status).toBe(200);
    expect(
      (await admin.request({ method: "PATCH", path: `/api/v1/clients/${spare.body.id}`, body: { name: "too late" } }))
        .status,
    ).toBe(409);
  });

  it("when a portal sign-in link is minted, exchanged, listed and revoked, then each answer keeps the contract", async () => {
    const link = await backoffice.post<{ id: number; url: string }>("/api/v1/portal_sessions");
    expect(link.status).toBe(201);
    const token = new URL(link.body.url, server.baseUrl).hash.replace("#link=", "");
    const session = await anonymous.as(token).post<{ id: number; token: string }>("/api/v1/portal_sessions/exchange");
    expect(session.status).toBe(200);
    expect((await backoffice.get<unknown[]>("/api/v1/portal_sessions")).body.length).toBeGreaterThan(0);
    expect((await anonymous.as(session.body.token).delete(`/api/v1/portal_sessions/${session.body.id}`)).status).toBe(
      200,
    );
  });

  it("when the admin fills the CRM and the back office reads it, then customers and contacts keep the contract", async () => {
    const customer = await admin.post<Customer>("/api/v1/customers", { name: `Acme ${tag}` });
    expect(customer.status).toBe(201);
    const contact = await admin.post<Contact>("/api/v1/contacts", {
      customerId: customer.body.id,
      firstName: "Ada",
      lastName: "Lovelace",
      email: `ada-${tag}@acme.test`,
    });
    expect(contact.status).toBe(201);
    ids.contact = contact.body.id;

    expect((await backoffice.get<Contact[]>("/api/v1/contacts")).body.length).toBeGreaterThan(0);
    expect((await backoffice.get(`/api/v1/contacts/${ids.contact}`)).status).toBe(200);
    expect((await backoffice.get("/api/v1/customers")).status).toBe(200);
    expect((await backoffice.get(`/api/v1/customers/${customer.body.id}`)).status).toBe(200);
  });

  it("when the admin fills the catalogue and the back office reads it, then products and packagings keep the contract", async () => {
    const product = await admin.post<Product>("/api/v1/products", {
      code: `OIL-${tag}`,
      label: "Olive oil",
      taxes: [{ name: "VAT", rate: 20, vat: true }],
    });
    expect(product.status).toBe(201);
    const packaging = await admin.post<Packaging>("/api/v1/packagings", {
      productId: product.body.id,
      name: "Bottle 1 L",
      unit: "L",
      unit_factor: 1,
    });
    expect(packaging.status).toBe(201);
    ids.packaging = packaging.body.id;

    // Two pages of one: the first carries a Link to the next.
    await admin.post<Packaging>("/api/v1/packagings", {
      productId: product.body.id,
      name: "Case of 6",
      unit: "L",
      unit_factor: 6,
    });
    const firstPage = await backoffice.get<Packaging[]>("/api/v1/packagings?limit=1");
    expect(firstPage.body).toHaveLength(1);
    expect(firstPage.headers.link).toMatch(/rel="next"/);

    expect((await backoffice.get(`/api/v1/packagings/${ids.packaging}`)).status).toBe(200);
    expect((await backoffice.get("/api/v1/products")).status).toBe(200);
    expect((await backoffice.get(`/api/v1/products/${product.body.id}`)).status).toBe(200);
  });

  it("when clients subscribe to every event, then discovery, subscription, reading, rotation and deletion keep the contract", async () => {
    const available = await backoffice.get<WebhookEvent[]>("/api/v1/webhooks/available");
    expect(available.body.map((e) => e.event)).toContain("sales_order_validated");

    for (const event of ["sales_order_created", "sales_order_validated", "sales_order_cancelled"]) {
      const subscribed = await backoffice.put<SubscriptionWithSecrets>("/api/v1/webhooks", {
        event,
        url: receiver.url,
      });
      expect(subscribed.status).toBe(201);
      if (event === "sales_order_validated") ids.subscription = subscribed.body.id;
    }
    expect(
      (await partner.put("/api/v1/webhooks", { event: "contact_reference_created", url: receiver.url })).status,
    ).toBe(201);
    for (const event of [
      "webhook_endpoint_disabled",
      "webhook_delivery_exhausted",
      "webhook_endpoint_recovered",
      "order_import_completed",
    ])
      expect((await backoffice.put("/api/v1/webhooks", { event, url: receiver.url })).status).toBe(201);
    for (const path of ["/down", "/flaky"])
      expect(
        (await backoffice.put("/api/v1/webhooks", { event: "sales_order_created", url: `${receiver.url}${path}` }))
          .status,
      ).toBe(201);
    ids.gone = (
      await backoffice.put<SubscriptionWithSecrets>("/api/v1/webhooks", {
        event: "sales_order_created",
        url: `${receiver.url}/gone`,
      })
    ).body.id;
    expect(
      (await backoffice.put<Subscription>("/api/v1/webhooks", { event: "sales_order_validated", url: receiver.url }))
        .status,
    ).toBe(200);

    expect((await backoffice.get<Subscription[]>("/api/v1/webhooks")).body.map((s) => s.id)).toContain(
      ids.subscription,
    );
    expect((await backoffice.get(`/api/v1/webhooks/${ids.subscription}`)).status).toBe(200);
    expect((await backoffice.post(`/api/v1/webhooks/${ids.subscription}/rotate`)).status).toBe(200);

    const spare = await backoffice.put<SubscriptionWithSecrets>("/api/v1/webhooks", {
      event: "sales_order_created",
      url: `${receiver.url}/spare`,
    });
    const deleted = await backoffice.delete(`/api/v1/webhooks/${spare.body.id}`);
    expect(deleted).toMatchObject({ status: 204, body: "" });
  });

  it("when a subscription is changed, disabled and enabled, and the event catalogue is read, then every answer keeps the contract", async () => {
    const types =
      await backoffice.get<{ event: string; schema: object; example: unknown; version: number }[]>(
        "/api/v1/webhooks/event_types",
      );
    expect(types.status).toBe(200);
    expect(types.body.map((t) => t.event)).toContain("webhook_delivery_exhausted");

    const other = await backoffice.put<SubscriptionWithSecrets>("/api/v1/webhooks", {
      event: "sales_order_cancelled",
      url: `${receiver.url}/other`,
    });
    const changed = await backoffice.request<Subscription>({
      method: "PATCH",
      path: `/api/v1/webhooks/${other.body.id}`,
      body: {
        url: `${receiver.url}/moved`,
        description: "moved",
        headers: { Authorization: "Bearer receiver-token" },
        rateLimit: 100,
      },
    });
    expect([changed.status, changed.body.url, changed.body.headerNames]).toEqual([
      200,
      `${receiver.url}/moved`,
      ["Authorization"],
    ]);
    const taken = await backoffice.request<ProblemDocument>({
      method: "PATCH",
      path: `/api/v1/webhooks/${other.body.id}`,
      body: { url: receiver.url },
    });
    expect(taken.status).toBe(409);
    const disabled = await backoffice.post<Subscription>(`/api/v1/webhooks/${other.body.id}/disable`);
    expect([disabled.status, disabled.body.status]).toEqual([200, "disabled"]);
    expect((await backoffice.post<Subscription>(`/api/v1/webhooks/${other.body.id}/enable`)).body.status).toBe(
      "active",
    );
  });

  it("when a partner's references are made and read, then they keep the contract, a repeated contact reference being 200", async () => {
    const packagingRef = await admin.post<PackagingReference>("/api/v1/packaging_references", {
      clientId: ids.partner,
      externalReference: `BOTTLE-${tag}`,
      packagingId: ids.packaging,
    });
    expect(packagingRef.status).toBe(201);
    expect((await partner.get<PackagingReference[]>("/api/v1/packaging_references")).body.map((r) => r.id)).toContain(
      packagingRef.body.id,
    );
    expect((await partner.get(`/api/v1/packaging_references/${packagingRef.body.id}`)).status).toBe(200);

    const payload = {
      contact: {
        externalReference: `CUST-${tag}`,
        firstName: "Grace",
        lastName: "Hopper",
        email: `grace-${tag}@navy.test`,
      },
      customer: { name: `Navy ${tag}` },
    };
    const created = await partner.post<ContactReference>("/api/v1/contact_references", payload);
    expect(created.status).toBe(201);
    const again = await partner.post<ContactReference>("/api/v1/contact_references", payload);
    expect(again.status).toBe(200);
    expect((await partner.get("/api/v1/contact_references")).status).toBe(200);
    expect((await partner.get(`/api/v1/contact_references/${created.body.id}`)).status).toBe(200);
  });

  it("when orders are created (twice with one Idempotency-Key), read, validated and cancelled, then every answer keeps the contract", async () => {
    const order = {
      contact: { id: ids.contact },
      invoicingAddress: ADDRESS,
      deliveryAddress: ADDRESS,
      items: [{ packaging: ids.packaging, orderedQuantity: 2 }],
    };
    const created = await backoffice.post<Order>("/api/v1/orders", order, { "Idempotency-Key": `order-${tag}` });
    expect(created.status).toBe(201);
    expect(created.headers.location).toMatch(new RegExp(`/api/v1/orders/${created.body.id}$`));
    const replayed = await backoffice.post<Order>("/api/v1/orders", order, { "Idempotency-Key": `order-${tag}` });
    expect(replayed.body.id).toBe(created.body.id);

    const byPartner = await partner.post<Order>("/api/v1/orders", {
      contact: { externalReferenceId: `CUST-${tag}` },
      invoicingAddress: ADDRESS,
      deliveryAddress: ADDRESS,
      items: [{ externalReferenceId: `BOTTLE-${tag}`, orderedQuantity: 1.5 }],
    });
    expect(byPartner.status).toBe(201);

    expect((await partner.get<Order[]>("/api/v1/orders")).body.map((o) => o.id)).toEqual([byPartner.body.id]);
    expect((await backoffice.get(`/api/v1/orders/${created.body.id}`)).status).toBe(200);

    const validated = await backoffice.post<Order>(`/api/v1/orders/${created.body.id}/validate`);
    expect(validated.body.status).toBe("validated");
    ids.validatedOrder = created.body.id;
    expect((await backoffice.post<ProblemDocument>(`/api/v1/orders/${created.body.id}/validate`)).status).toBe(409);
    expect((await backoffice.post<Order>(`/api/v1/orders/${created.body.id}/cancel`)).body.status).toBe("cancelled");
  });

  it("when a back office sends a batch, one order good and one refused, then the answer keeps the contract", async () => {
    const good = {
      contact: { id: ids.contact },
      invoicingAddress: ADDRESS,
      deliveryAddress: ADDRESS,
      items: [{ packaging: ids.packaging, orderedQuantity: 1 }],
    };
    const { status, body } = await backoffice.post<{ results: { status: number }[] }>("/api/v1/orders/batch", {
      orders: [good, { ...good, items: [] }],
      errorPolicy: "reject_failed_rows",
    });
    expect(status).toBe(200);
    expect(body.results.map((r) => r.status)).toEqual([201, 422]);
  });

  it("when a back office imports two orders as NDJSON, one good and one refused, then the upload, the import and its results keep the contract", async () => {
    const good = {
      contact: { id: ids.contact },
      invoicingAddress: ADDRESS,
      deliveryAddress: ADDRESS,
      items: [{ packaging: ids.packaging, orderedQuantity: 1 }],
    };
    const upload = await uploadImport(backoffice, ndjson([good, { ...good, items: [] }]));
    expect(upload.status).toBe(202);
    const location = pathOf(upload.headers.location);
    expect((await importEnded(backoffice, location)).status).toBe("completed");
    expect((await importResults(backoffice, location)).map((r) => r.status)).toEqual([201, 422]);
  });

  it("when events happen, then every webhook request keeps the contract, and deliveries can be listed and redelivered", async () => {
    const contract = await backoffice.contract();
    for (const event of [
      "sales_order_created",
      "sales_order_validated",
      "sales_order_cancelled",
      "contact_reference_created",
      "webhook_endpoint_disabled",
      "webhook_delivery_exhausted",
      "webhook_endpoint_recovered",
      "order_import_completed",
    ]) {
      const delivered = await eventually(
        `the ${event} webhook`,
        () => receiver.received.find((w) => w.headers["x-webhook-event"] === event),
        () =>
          `Received: ${receiver.received.map((w) => w.headers["x-webhook-event"]).join(", ") || "nothing"}. Server output:\n${server.output().slice(-4000)}`,
      );
      expect({ event, problems: contract.checkWebhook(delivered.headers, delivered.body) }).toEqual({
        event,
        problems: [],
      });
    }
    const validated = receiver.received.find((w) => w.headers["x-webhook-event"] === "sales_order_validated");
    expect((validated?.body as Order).id).toBe(ids.validatedOrder);

    // Issue 22: the events feed holds the same event, with its webhook-id; a forged cursor is 422 naming `after`.
    const feedUrl = "/api/v1/events?event=sales_order_validated&limit=500";
    let feed = await backoffice.get<{ webhookId: string }[]>(feedUrl);
    for (
      const deadline = Date.now() + 20_000;
      !feed.body.some((e) => e.webhookId === validated?.headers["webhook-id"]);
    ) {
      if (Date.now() > deadline)
        throw new Error(`The validated order is not in the events feed: ${JSON.stringify(feed.body)}`);
      await new Promise((r) => setTimeout(r, 100));
      feed = await backoffice.get<{ webhookId: string }[]>(feedUrl);
    }
    expect(feed.headers.link).toMatch(
      /^<.*\/api\/v1\/events\?event=sales_order_validated&limit=500&after=[A-Za-z0-9_-]+>; rel="next"$/,
    );
    const forged = await backoffice.get<ProblemDocument>(`/api/v1/events?after=nope`);
    expect(forged.status).toBe(422);
    expect(forged.body.errors).toEqual([expect.objectContaining({ path: "after" })]);

    const deliveries = await backoffice.get<Delivery[]>(`/api/v1/webhooks/${ids.subscription}/deliveries`);
    expect(deliveries.body.length).toBeGreaterThan(0);
    const redelivered = await backoffice.post<Delivery>(
      `/api/v1/webhooks/${ids.subscription}/deliveries/${deliveries.body[0].id}/redeliver`,
    );
    expect(redelivered.status).toBe(202);

    const stats = await backoffice.get<{ id: number; status: string; lastFailure: { statusCode: number } }>(
      `/api/v1/webhooks/${ids.gone}/stats`,
    );
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({ id: ids.gone, status: "disabled", lastFailure: { statusCode: 410 } });
    // Issue 21: sending to a disabled subscription is refused, with a problem type of its own.
    const refused = await backoffice.post<ProblemDocument>(`/api/v1/webhooks/${ids.gone}/test`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ type: "/problems/subscription-disabled", subscriptionId: ids.gone });
    const gone = await backoffice.get<Delivery[]>(`/api/v1/webhooks/${ids.gone}/deliveries?order=desc&limit=5`);
    expect(gone.body.flatMap((d) => d.attempts)).toContainEqual(
      expect.objectContaining({ number: 1, trigger: "scheduled", statusCode: 410, responseBodyTruncated: false }),
    );
    const enabled = await backoffice.post<Subscription>(`/api/v1/webhooks/${ids.gone}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ status: "active", disabledAt: null });

    const key = { "Idempotency-Key": `contract-test-${tag}` };
    const tested = await backoffice.post<Delivery>(`/api/v1/webhooks/${ids.subscription}/test`, undefined, key);
    expect(tested.status).toBe(202);
    expect(tested.body.event).toBe("webhook_test");
    const replayed = await backoffice.post<Delivery>(`/api/v1/webhooks/${ids.subscription}/test`, undefined, key);
    expect(replayed).toMatchObject({ status: 202, body: { id: tested.body.id } });
    expect(replayed.headers["idempotent-replayed"]).toBe("true");

    // Issue 21: search, newest first, across every subscription of the caller; the webhook-id finds one.
    const newest = await backoffice.get<Delivery[]>(
      `/api/v1/webhooks/deliveries?order=desc&event=webhook_test&limit=1`,
    );
    expect(newest.body.map((d) => d.id)).toEqual([tested.body.id]);
    const found = await backoffice.get<Delivery[]>(
      `/api/v1/webhooks/${ids.subscription}/deliveries?webhookId=${tested.body.webhookId}&since=${encodeURIComponent(new Date(Date.now() - 3600_000).toISOString())}`,
    );
    expect(found.body.map((d) => d.id)).toEqual([tested.body.id]);
    const test = await eventually(
      "the webhook_test webhook",
      () => receiver.received.find((w) => w.headers["x-webhook-event"] === "webhook_test"),
      () => `Server output:\n${server.output().slice(-4000)}`,
    );
    expect(contract.checkWebhook(test.headers, test.body)).toEqual([]);
    const recovery = await backoffice.post<{ id: number }>(`/api/v1/webhooks/${ids.subscription}/recover`, {
      since: new Date(Date.now() - 3600_000).toISOString(),
    });
    expect(recovery.status).toBe(202);
    expect((await backoffice.get(`/api/v1/webhooks/${ids.subscription}/recoveries/${recovery.body.id}`)).status).toBe(
      200,
    );
  });

  describe("when requests go wrong, then each problem keeps the contract", () => {
    it("401 without an API key, and with an unknown one", async () => {
      const missing = await anonymous.get<ProblemDocument>("/api/v1/orders");
      expect(missing.status).toBe(401);
      expect(missing.headers["www-authenticate"]).toMatch(/^Bearer/);
      expect((await anonymous.as("not-a-key-of-ours").get("/api/v1/orders")).status).toBe(401);
    });

    it("403 when a partner lists contacts", async () => {
      const { status, body } = await partner.get<ProblemDocument>("/api/v1/contacts");
      expect(status).toBe(403);
      expect(body.requiredScope).toBe("crm");
    });

    it("404 for an order that does not exist", async () => {
      expect((await backoffice.get("/api/v1/orders/999999")).status).toBe(404);
    });

    it("422 naming each bad field", async () => {
      const { status, body } = await admin.post<ProblemDocument>("/api/v1/contacts", {
        customerId: "x",
        firstName: "",
        email: "nope",
        extra: 1,
      });
      expect(status).toBe(422);
      expect(body.errors?.map((e) => e.path)).toEqual(expect.arrayContaining(["customerId", "email", "extra"]));
    });

    it("400 for a body that is not JSON", async () => {
      expect((await backoffice.request({ method: "POST", path: "/api/v1/orders", rawBody: "{not json" })).status).toBe(
        400,
      );
    });

    it("413 for a body over 1 MiB", async () => {
      const rawBody = JSON.stringify({ externalId: "x".repeat(1_100_000) });
      expect((await backoffice.request({ method: "POST", path: "/api/v1/orders", rawBody })).status).toBe(413);
    });
  });

  it("when every path is asked with OPTIONS, and with HEAD where it has a GET, then each answer keeps the contract: 204 with Allow, and the GET's status and headers without a body", async () => {
    const contract = await anonymous.contract();
    const paths = contract.document.paths as Record<string, Record<string, { parameters?: unknown[] }>>;
    for (const [template, item] of Object.entries(paths)) {
      // Each path parameter's documented example (issue 20: tools build their requests from them).
      const examples = new Map(
        Object.values(item)
          .flatMap((op) => (op.parameters ?? []) as { name?: string; in?: string; example?: unknown }[])
          .filter((p) => p.in === "path")
          .map((p) => [p.name, String(p.example)]),
      );
      const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => examples.get(name) ?? "");
      const options = await anonymous.request({ method: "OPTIONS", path });
      expect({ path, status: options.status, allow: options.headers.allow }).toEqual({
        path,
        status: 204,
        allow: expect.stringContaining("OPTIONS"),
      });
      if (!item.head) continue;
      const keyed = (item.head as { security?: unknown[] }).security === undefined;
      const head = await (keyed ? backoffice : anonymous).request({ method: "HEAD", path });
      expect({ path, body: head.body }).toEqual({ path, body: "" });
    }
  });

  it("when the run is over, then every documented operation and webhook was exercised", async () => {
    const contract = await anonymous.contract();
    const webhooks = Object.keys(contract.document.webhooks ?? {}).map((event) => `WEBHOOK ${event}`);
    const missing = [...contract.operations(), ...webhooks].filter((op) => !contract.exercised.has(op));
    expect(missing).toEqual([]);
  });
});
