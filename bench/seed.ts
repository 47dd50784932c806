/**
 * Prepares a target through its real HTTP API, as an operator and a partner would: an admin
 * (ADMIN_API_KEY) creates a partner client, a customer, products with taxes, packagings and
 * the partner's packaging references; the partner registers its contact reference.
 */
import { ITEMS_PER_ORDER, orderPayload, type PartnerReferences } from "./order-payload";

export interface SeededPartner {
  clientId: number;
  apiKey: string;
  references: PartnerReferences;
}

/** In the distributed mode the gateway may not have discovered a service yet: 503, or 404 naming the service. */
const NOT_DISCOVERED_YET = /Service '[^']+' is not (found|available)/;
const DISCOVERY_WAIT_MS = 15_000;

/** One API call with a JSON body, retried while the gateway has not discovered the service yet. */
export async function callApi<T>(
  baseUrl: string,
  key: string,
  method: "POST" | "PUT",
  path: string,
  body: unknown,
  expected: number[] = [201],
): Promise<T> {
  const deadline = Date.now() + DISCOVERY_WAIT_MS;
  for (;;) {
    const res = await fetch(`${baseUrl}/api/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    if (expected.includes(res.status)) return JSON.parse(text) as T;
    const retry =
      (res.status === 503 || (res.status === 404 && NOT_DISCOVERED_YET.test(text))) && Date.now() < deadline;
    if (!retry)
      throw new Error(`${method} ${path} answered ${res.status} (expected ${expected.join(" or ")}): ${text}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const post = <T>(baseUrl: string, key: string, path: string, body: unknown, expected: number[] = [201]): Promise<T> =>
  callApi<T>(baseUrl, key, "POST", path, body, expected);

const PRODUCTS = [
  {
    code: "BENCH-OIL",
    label: "Olive oil",
    taxes: [
      { name: "VAT", rate: 20, vat: true },
      { name: "Eco-fee", rate: 0.5, vat: false },
    ],
  },
  { code: "BENCH-FLOUR", label: "Flour", taxes: [{ name: "VAT", rate: 5.5, vat: true }] },
  {
    code: "BENCH-WINE",
    label: "Red wine",
    taxes: [
      { name: "VAT", rate: 20, vat: true },
      { name: "Excise", rate: 3.2, vat: false },
    ],
  },
];

export async function seedThroughApi(baseUrl: string, adminKey: string): Promise<SeededPartner> {
  const partner = await post<{ id: number; apiKey: string }>(baseUrl, adminKey, "/clients", {
    name: "Benchmark partner",
    kind: "partner",
  });
  const customer = await post<{ name: string }>(baseUrl, adminKey, "/customers", { name: "Benchmark customer" });

  const packagingReferences: string[] = [];
  for (const [i, product] of PRODUCTS.entries()) {
    const { id: productId } = await post<{ id: number }>(baseUrl, adminKey, "/products", product);
    const { id: packagingId } = await post<{ id: number }>(baseUrl, adminKey, "/packagings", {
      productId,
      name: `${product.label}, case of ${6 * (i + 1)}`,
      unit: "piece",
      unit_factor: 6 * (i + 1),
    });
    const code = `SKU-${product.code}`;
    await post(baseUrl, adminKey, "/packaging_references", {
      clientId: partner.id,
      externalReference: code,
      packagingId,
    });
    packagingReferences.push(code);
  }

  const contact = "CUST-BENCH-1";
  await post(
    baseUrl,
    partner.apiKey,
    "/contact_references",
    {
      contact: { externalReference: contact, firstName: "Ada", lastName: "Lovelace", email: "ada@bench.test" },
      customer: { name: customer.name },
    },
    [200, 201],
  );

  return {
    clientId: partner.id,
    apiKey: partner.apiKey,
    references: { contact, packagings: packagingReferences.slice(0, ITEMS_PER_ORDER) },
  };
}

/** One order before the load: the whole path works (and every service is discovered). */
export async function placeOneOrder(baseUrl: string, partner: SeededPartner): Promise<void> {
  await post(baseUrl, partner.apiKey, "/orders", orderPayload(partner.references, `bench-smoke-${Date.now()}`));
}
