/**
 * The logs of a whole run at LOG_LEVEL=debug: creates, lists, a client whose key is shown once,
 * a webhook subscription (key and secret), an order validated and its webhook delivered. No
 * secret the run saw may appear in any line; the request id reaches the access log and the
 * log lines of the calls it caused.
 */
import { startEmbedded, type EmbeddedProcess } from "../helpers/embedded-process";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface Answer<T> {
  status: number;
  body: T;
}

interface LogLine {
  msg?: string;
  mod?: string;
  requestId?: string;
  route?: string;
  status?: number;
  clientId?: number;
}

describe("logs of a full run", () => {
  let server: EmbeddedProcess;
  let receiver: WebhookReceiver;
  /** Every secret the run handled: what must never be logged. */
  const secrets = new Set<string>();

  async function call<T>(
    key: string,
    method: string,
    path: string,
    body?: unknown,
    requestId?: string,
  ): Promise<Answer<T>> {
    const authorization = `Bearer ${key}`;
    secrets.add(key);
    secrets.add(authorization);
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: {
        authorization,
        "content-type": "application/json",
        ...(requestId ? { "x-request-id": requestId } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startEmbedded({ LOG_LEVEL: "debug" });
    secrets.add(server.adminKey);
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  });

  it("when a run creates, lists, issues keys, subscribes and delivers a webhook, then no secret is in any log line and the request id follows the work", async () => {
    const admin = server.adminKey;
    const customer = await call<{ id: number }>(admin, "POST", "/api/v1/customers", { name: "Logs Ltd" });
    expect(customer.status).toBe(201);
    const contact = await call<{ id: number }>(admin, "POST", "/api/v1/contacts", {
      customerId: customer.body.id,
      firstName: "Ada",
      lastName: "Lovelace",
      email: "ada@logs.test",
    });
    expect(contact.status).toBe(201);
    const product = await call<{ id: number }>(admin, "POST", "/api/v1/products", {
      code: "LOG-1",
      label: "Olive oil",
      taxes: [{ name: "VAT", rate: 20, vat: true }],
    });
    expect(product.status).toBe(201);
    const packaging = await call<{ id: number }>(admin, "POST", "/api/v1/packagings", {
      productId: product.body.id,
      name: "Bottle",
      unit: "L",
      unit_factor: 1,
    });
    expect(packaging.status).toBe(201);
    expect((await call(admin, "GET", "/api/v1/customers")).status).toBe(200);

    const client = await call<{ id: number; apiKey: string }>(
      admin,
      "POST",
      "/api/v1/clients",
      { name: "Back office", kind: "backoffice" },
      "logs-create-client",
    );
    expect(client.status).toBe(201);
    const backoffice = client.body.apiKey;
    secrets.add(backoffice);
    expect((await call(backoffice, "GET", "/api/v1/contacts")).status).toBe(200);
    expect((await call("oik_not-a-key-but-still-a-secret-0123456789", "GET", "/api/v1/contacts")).status).toBe(401);

    const webhook = await call<{ id: number; key: string; secret: string }>(backoffice, "PUT", "/api/v1/webhooks", {
      event: "sales_order_validated",
      url: receiver.url,
    });
    expect(webhook.status).toBe(201);
    secrets.add(webhook.body.key);
    secrets.add(webhook.body.secret);

    const order = await call<{ id: number }>(backoffice, "POST", "/api/v1/orders", {
      externalId: "LOG-ORDER-1",
      contact: { id: contact.body.id },
      invoicingAddress: { recipient: "Ada", street: "1 Way", zipCode: "75001", city: "Paris", country: "FR" },
      deliveryAddress: { recipient: "Ada", street: "1 Way", zipCode: "75001", city: "Paris", country: "FR" },
      items: [{ packaging: packaging.body.id, orderedQuantity: 2 }],
    });
    expect(order.status).toBe(201);
    const validated = await call(
      backoffice,
      "POST",
      `/api/v1/orders/${order.body.id}/validate`,
      undefined,
      "logs-validate-1",
    );
    expect(validated.status).toBe(200);
    await receiver.waitFor(
      (received) => received.some((r) => r.headers["x-webhook-event"] === "sales_order_validated"),
      20_000,
    );
    expect(receiver.received[0].headers["x-webhook-key"]).toBe(webhook.body.key);

    await server.stop();
    const output = server.output();
    for (const secret of secrets)
      expect({ secret, logged: output.includes(secret) }).toEqual({ secret, logged: false });

    const lines = output
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as LogLine);
    // The access log names the request, its route and its client.
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: "request",
        route: "/api/v1/clients",
        status: 201,
        requestId: "logs-create-client",
        clientId: expect.any(Number),
      }),
    );
    // The lines written while validating, beyond the gateway's own, carry the caller's request id.
    const validateLines = lines.filter((l) => l.requestId === "logs-validate-1");
    expect(validateLines).toContainEqual(expect.objectContaining({ mod: "broker", msg: "Call action locally." }));
    expect(validateLines).toContainEqual(
      expect.objectContaining({ msg: "request", route: "/api/v1/orders/:id/validate", status: 200 }),
    );
    // ...and so does the webhook attempt that the validation caused, long after the request ended.
    expect(validateLines).toContainEqual(
      expect.objectContaining({ msg: "webhook attempt", event: "sales_order_validated", outcome: "delivered" }),
    );
  }, 120_000);
});
