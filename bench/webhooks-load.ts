/**
 * What the webhooks benchmark does through the real API: a back-office client subscribes the
 * receiver's paths to `sales_order_validated`, the partner's orders are created beforehand, and
 * then validated — as fast as some connections allow (a burst) or paced at a steady rate — with
 * the time each validation's answer arrived, on the clock the receiver also uses (Date.now()).
 */
import { orderPayload } from "./order-payload";
import { callApi, type SeededPartner } from "./seed";

export const SUBSCRIBED_EVENT = "sales_order_validated";

/** The receiver path of subscription `n` (1-based): one client, one URL per subscription. */
export const targetPath = (n: number) => `/hook/${n}`;

/** Subscription `n`'s receiver origin: each subscription has its own, as separate subscribers do. */
export const targetOrigin = (origins: string[], n: number) => origins[(n - 1) % origins.length];

export interface ApiClient {
  clientId: number;
  apiKey: string;
}

export interface ValidationAnswer {
  orderId: number;
  status: number;
  /** The order's code from the answer; null when the validation failed. */
  code: string | null;
  /** The answer's body: the order as validated, which is what the subscribers receive. */
  body: string;
  sentAt: number;
  answeredAt: number;
}

/** The instance's back office: it may validate any order and hears of every client's orders. */
export async function createBackOffice(baseUrl: string, adminKey: string): Promise<ApiClient> {
  const created = await callApi<{ id: number; apiKey: string }>(baseUrl, adminKey, "POST", "/clients", {
    name: "Benchmark back office",
    kind: "backoffice",
  });
  return { clientId: created.id, apiKey: created.apiKey };
}

/**
 * `count` subscriptions to the validated event: subscription n on /hook/n of the receiver's
 * n-th origin; resolves to the paths.
 */
export async function subscribeReceiver(
  baseUrl: string,
  client: ApiClient,
  origins: string[],
  count: number,
): Promise<string[]> {
  const paths = Array.from({ length: count }, (_, i) => targetPath(i + 1));
  for (const [i, path] of paths.entries()) {
    await callApi(
      baseUrl,
      client.apiKey,
      "PUT",
      "/webhooks",
      { event: SUBSCRIBED_EVENT, url: `${targetOrigin(origins, i + 1)}${path}` },
      [201],
    );
  }
  return paths;
}

/** Runs `work` on every item, at most `concurrency` at a time, keeping the results in order. */
async function mapConcurrently<T, R>(items: T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** The partner's orders, pending, created `concurrency` at a time; resolves to their ids. */
export async function createOrders(
  baseUrl: string,
  partner: SeededPartner,
  count: number,
  concurrency: number,
  externalIdPrefix: string,
): Promise<number[]> {
  const indexes = Array.from({ length: count }, (_, i) => i);
  return mapConcurrently(indexes, concurrency, async (i) => {
    const order = await callApi<{ id: number }>(
      baseUrl,
      partner.apiKey,
      "POST",
      "/orders",
      orderPayload(partner.references, `${externalIdPrefix}-${i}`),
    );
    return order.id;
  });
}

async function validate(baseUrl: string, client: ApiClient, orderId: number): Promise<ValidationAnswer> {
  const sentAt = Date.now();
  try {
    const res = await fetch(`${baseUrl}/api/v1/orders/${orderId}/validate`, {
      method: "POST",
      headers: { Authorization: `Bearer ${client.apiKey}` },
    });
    const body = await res.text();
    const answeredAt = Date.now();
    const code = res.ok ? ((JSON.parse(body) as { code?: string }).code ?? null) : null;
    return { orderId, status: res.status, code, body, sentAt, answeredAt };
  } catch (err) {
    return {
      orderId,
      status: 0,
      code: null,
      body: err instanceof Error ? err.message : String(err),
      sentAt,
      answeredAt: Date.now(),
    };
  }
}

/** Validates every order, `connections` at a time, as fast as the service answers. */
export function validateAll(
  baseUrl: string,
  client: ApiClient,
  orderIds: number[],
  connections: number,
): Promise<ValidationAnswer[]> {
  return mapConcurrently(orderIds, connections, (id) => validate(baseUrl, client, id));
}

/**
 * Validates the orders at a steady `perSecond`, open loop: validation i is sent at start + i / rate
 * whatever the earlier ones' answers, so a slow answer does not lower the offered load.
 */
export async function validatePaced(
  baseUrl: string,
  client: ApiClient,
  orderIds: number[],
  perSecond: number,
): Promise<ValidationAnswer[]> {
  const intervalMs = 1000 / perSecond;
  const start = performance.now();
  const pending: Promise<ValidationAnswer>[] = [];
  for (let i = 0; i < orderIds.length; i++) {
    const wait = start + i * intervalMs - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(validate(baseUrl, client, orderIds[i]));
  }
  return Promise.all(pending);
}
