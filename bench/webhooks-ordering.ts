/**
 * The `unordered` and `per_entity` phases of bench:webhooks (docs/webhooks.md, "Order"): orders
 * that change five times each, delivered to the bench's subscriptions first with `ordering:
 * none`, then with `per_entity`, in one run, so that the ratio of their deliveries/s is the cost
 * of order. The API raises at most three events per order (created, validated, cancelled), so
 * the events are written with SQL into the orders service's outbox, as its lifecycle would write
 * them: each change of every order in one transaction, committed before the next change, with
 * the order's `version` in the body. Its relay publishes them; from there on the path is the
 * service's own. The bodies carry a `code` per event, which the receiver records.
 */
import pg from "pg";
import { deliveryKey, type ReceivedRequest } from "./webhook-sink-client";
import { SUBSCRIBED_EVENT, type ApiClient, type ValidationAnswer } from "./webhooks-load";

/** Changes (events) of each order in the ordering phases. */
export const EVENTS_PER_ORDER = 5;
/** Entity ids of the phases' orders start here: none of the bench's real orders has one. */
const FIRST_ENTITY_ID = 100_000_000;

export type Ordering = "none" | "per_entity";

function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.href;
}

const codeOf = (phase: string, order: number, version: number) => `ORD-${phase}-${order}-v${version}`;

/**
 * Writes `orders` orders' EVENTS_PER_ORDER changes to orders.outbox, one transaction per change
 * (every order's), each after the one before committed. Resolves to one answer per event, as a
 * validation's: its code, and when its change committed (the latency's start).
 */
export async function emitOrderChanges(
  serverUrl: string,
  database: string,
  ownerClientId: number,
  phase: string,
  firstOrder: number,
  orders: number,
): Promise<ValidationAnswer[]> {
  const client = new pg.Client({ connectionString: databaseUrl(serverUrl, database) });
  await client.connect();
  const answers: ValidationAnswer[] = [];
  try {
    for (let version = 1; version <= EVENTS_PER_ORDER; version++) {
      const sentAt = Date.now();
      // About as long as the validated orders the burst delivers (~1.5 kB), as webhooks-preload.ts.
      await client.query(
        `INSERT INTO orders.outbox (event, owner_client_id, entity, entity_id, data)
         SELECT $1, $2, 'order', $3::int + g,
                json_build_object('id', $3::int + g, 'code', 'ORD-' || $4 || '-' || g || '-v' || $5, 'version', $5::int,
                                  'status', 'validated', 'note', repeat('x', 1400))
           FROM generate_series($6::int, $7::int) g`,
        [SUBSCRIBED_EVENT, ownerClientId, FIRST_ENTITY_ID, phase, version, firstOrder, firstOrder + orders - 1],
      );
      const answeredAt = Date.now();
      for (let order = firstOrder; order < firstOrder + orders; order++)
        answers.push({
          orderId: order,
          status: 201,
          code: codeOf(phase, order, version),
          body: "",
          sentAt,
          answeredAt,
        });
    }
    return answers;
  } finally {
    await client.end();
  }
}

/** Sets every subscription of the client to this ordering (PATCH /webhooks/{id}). */
export async function setOrdering(baseUrl: string, client: ApiClient, ordering: Ordering): Promise<void> {
  const headers = { Authorization: `Bearer ${client.apiKey}`, "Content-Type": "application/json" };
  const list = await fetch(`${baseUrl}/api/v1/webhooks?limit=500`, { headers });
  if (!list.ok) throw new Error(`GET /webhooks answered ${list.status}`);
  for (const { id } of (await list.json()) as { id: number }[]) {
    const res = await fetch(`${baseUrl}/api/v1/webhooks/${id}`, {
      method: "PATCH",
      headers,
      body: JSON.stringify({ ordering }),
    });
    if (!res.ok) throw new Error(`PATCH /webhooks/${id} answered ${res.status}: ${await res.text()}`);
  }
}

/**
 * (order, path) lines whose first receipts did not come in version order: 0 is what `per_entity`
 * promises; the `unordered` phase shows how many `none` has.
 */
export function linesOutOfOrder(requests: ReceivedRequest[], phase: string): number {
  const pattern = new RegExp(`^ORD-${phase}-(\\d+)-v(\\d+)$`);
  const seen = new Set<string>();
  const last = new Map<string, number>();
  const broken = new Set<string>();
  for (const r of [...requests].sort((a, b) => a.at - b.at)) {
    const match = pattern.exec(r.code);
    const key = deliveryKey(r.path, r.webhookId);
    if (!match || seen.has(key)) continue;
    seen.add(key);
    const line = `${match[1]} ${r.path}`;
    const version = Number(match[2]);
    if ((last.get(line) ?? 0) > version) broken.add(line);
    last.set(line, Math.max(version, last.get(line) ?? 0));
  }
  return broken.size;
}
