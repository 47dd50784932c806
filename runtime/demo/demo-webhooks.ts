/**
 * `npm run demo:webhooks`: the webhook story in one command. Starts the embedded mode on a
 * throwaway database and a local receiver, then over the HTTP API: a back-office client, a
 * subscription to `sales_order_validated` pointing at the receiver, an order created and
 * validated; prints the signed delivery the receiver got and verifies it with the
 * `standardwebhooks` library, as a subscriber would. A local http:// receiver is refused in
 * production, so this process alone sets WEBHOOK_ALLOW_INSECURE_TARGETS (and says so).
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { ConfigError, loadConfig } from "../../shared/config/config";
import { API_PREFIX } from "../../gateway/routes";
import { createBroker, stopBroker } from "../broker";
import { DEMO_ADDRESS } from "./demo-data";
import { startDemoReceiver, type ReceivedRequest } from "./demo-webhook-receiver";
import { errorText } from "../error-text";

const DELIVERY_WAIT_MS = 30_000;
const SHOWN_HEADERS = [
  "content-type",
  "user-agent",
  "x-webhook-event",
  "x-webhook-key",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
];

const say = (line = "") => console.log(line);

type Api = <T>(key: string, method: string, path: string, body?: unknown) => Promise<T>;

function apiAt(baseUrl: string): Api {
  return async <T>(key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    say(`  ${method} ${API_PREFIX}${path} → ${res.status}`);
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  };
}

/** What a back office needs to order: a contact and a packaging, made by the admin. */
async function setUpCatalogueAndContact(api: Api, admin: string): Promise<{ contactId: number; packagingId: number }> {
  const customer = await api<{ id: number }>(admin, "POST", "/customers", { name: "Acme Retail" });
  const contact = await api<{ id: number }>(admin, "POST", "/contacts", {
    customerId: customer.id,
    firstName: "Ada",
    lastName: "Lovelace",
    email: "ada@acme-retail.example",
  });
  const product = await api<{ id: number }>(admin, "POST", "/products", {
    code: "OLIVE-OIL-EV",
    label: "Extra virgin olive oil",
    taxes: [{ name: "VAT", rate: 5.5, vat: true }],
  });
  const packaging = await api<{ id: number }>(admin, "POST", "/packagings", {
    productId: product.id,
    name: "Can 5 L",
    unit: "litre",
    unit_factor: 5,
  });
  return { contactId: contact.id, packagingId: packaging.id };
}

function printDelivery(request: ReceivedRequest): void {
  say(`  ${request.method} ${request.path}`);
  for (const name of SHOWN_HEADERS) say(`  ${name}: ${String(request.headers[name] ?? "")}`);
  say();
  say(`  ${JSON.stringify(JSON.parse(request.body), null, 2).split("\n").join("\n  ")}`);
}

/** Verifies as a subscriber does: the signature over id, timestamp and the exact body, with the secret. */
function verifyDelivery(request: ReceivedRequest, secret: string): void {
  const headers = Object.fromEntries(
    ["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => [name, String(request.headers[name])]),
  );
  new Webhook(secret).verify(request.body, headers);
}

async function main(): Promise<void> {
  const adminKey = `demo-admin-${randomBytes(18).toString("base64url")}`;
  const cfg = loadConfig({
    ...process.env,
    // Always embedded and throwaway: a DATABASE_URL or TRANSPORTER of the shell must not get demo rows.
    DATABASE_URL: "pglite://memory",
    TRANSPORTER: "",
    PORT: process.env.PORT || "0",
    HEALTH_PORT: "0",
    DEMO_DATA: "never",
    ADMIN_API_KEY: adminKey,
    LOG_LEVEL: process.env.LOG_LEVEL || "warn",
    WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  });
  const receiver = await startDemoReceiver();
  const broker = createBroker(cfg);
  try {
    await broker.start();
    const server = (broker.getLocalService("gateway") as unknown as { server: Server }).server;
    const api = apiAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}${API_PREFIX}`);
    say("Webhooks demo: the embedded mode on a throwaway database, and a receiver of our own.");
    say(`WEBHOOK_ALLOW_INSECURE_TARGETS=true for this demo only: the receiver is ${receiver.url}, a plain-http local`);
    say("address that a real deployment refuses (subscriptions must be https:// and public).");
    say();

    say("1. The admin creates a contact, a packaging and a back-office client:");
    const { contactId, packagingId } = await setUpCatalogueAndContact(api, adminKey);
    const backoffice = await api<{ apiKey: string }>(adminKey, "POST", "/clients", {
      name: "Webhooks demo back office",
      kind: "backoffice",
    });

    say("2. The back office subscribes the receiver to sales_order_validated:");
    const subscription = await api<{ id: number; key: string; secret: string }>(backoffice.apiKey, "PUT", "/webhooks", {
      event: "sales_order_validated",
      url: receiver.url,
    });
    say(
      `  subscription ${subscription.id}, signing secret ${subscription.secret} (shown only on creation and rotation)`,
    );

    say("3. It creates an order and validates it:");
    const order = await api<{ id: number; code: string }>(backoffice.apiKey, "POST", "/orders", {
      externalId: "WEBHOOKS-DEMO-1",
      contact: { id: contactId },
      invoicingAddress: DEMO_ADDRESS,
      deliveryAddress: DEMO_ADDRESS,
      items: [{ packaging: packagingId, orderedQuantity: 2 }],
    });
    await api(backoffice.apiKey, "POST", `/orders/${order.id}/validate`);

    say("4. The receiver got this signed delivery:");
    const delivery = await receiver.firstRequest(DELIVERY_WAIT_MS);
    printDelivery(delivery);
    say();
    verifyDelivery(delivery, subscription.secret);
    say(
      `5. Verified with the standardwebhooks library: webhook-signature matches the secret, and the body is order ${order.code}.`,
    );
    say("   Subscribers: docs/webhooks.md (verifying, retries, deduplicating on webhook-id).");
  } finally {
    await stopBroker(broker).catch(() => undefined);
    await receiver.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof ConfigError ? err.message : `demo:webhooks failed: ${errorText(err)}`);
    process.exit(1);
  },
);
