/**
 * `--preload N`: puts N orders of the benchmark's partner into a target's database with SQL
 * (the API would take hours for a million), so that the load runs on a database that already
 * holds them. Each preloaded order is a copy of the smoke order the bench placed through the API
 * — the same contact, customer, addresses and three item snapshots, a code and an externalId of
 * its own — with its `sales_order_created` outbox row, already published. Written in chunks, one
 * statement per table and chunk, then ANALYZEd as autovacuum would soon do.
 *
 * Then the pages a partner reads: `GET /api/v1/orders` page 1 and page 1001 (keyset paging: the
 * cursor after the 50,000th order), each under the same short load, so that their ratio says
 * whether reading deep pages costs more on a large table.
 */
import pg from "pg";
import { encodeCursor } from "../shared/http/paging";
import type { SeededPartner } from "./seed";

const CHUNK = 50_000;
export const PAGE_LIMIT = 50;
export const DEEP_PAGE = 1001;

export interface PreloadFigures {
  orders: number;
  seconds: number;
  /** The database's size once preloaded (pg_database_size). */
  databaseMB: number;
}

/** The last order the partner placed through the API: the template of every preloaded one. */
async function templateOrderId(client: pg.Client, clientId: number): Promise<number> {
  const { rows } = await client.query<{ id: number }>(`SELECT max(id) AS id FROM orders.orders WHERE client_id = $1`, [
    clientId,
  ]);
  if (!rows[0]?.id) throw new Error("--preload needs one order of the partner to copy: none found");
  return Number(rows[0].id);
}

/** Orders `from..to` (numbering of the preload, not ids), their items and their published events. */
async function insertChunk(client: pg.Client, template: number, from: number, to: number): Promise<void> {
  // Codes of a day long gone: today's counter (orders.order_code_counters) never meets them.
  await client.query(
    `WITH made AS (
       INSERT INTO orders.orders (code, client_id, status, external_id, external_reference, contact, customer,
                                  invoicing_address, delivery_address, created_at, updated_at)
       SELECT 'ORD-20000101-' || lpad(g::text, 7, '0'), o.client_id, 'pending', 'preload-' || g, o.external_reference,
              o.contact, o.customer, o.invoicing_address, o.delivery_address, now(), now()
         FROM orders.orders o, generate_series($2::int, $3::int) g
        WHERE o.id = $1
       RETURNING id),
     items AS (
       INSERT INTO orders.order_items (order_id, position, ordered_quantity, packaging_id, packaging, packaging_reference)
       SELECT made.id, i.position, i.ordered_quantity, i.packaging_id, i.packaging, i.packaging_reference
         FROM made, orders.order_items i
        WHERE i.order_id = $1)
     INSERT INTO orders.outbox (event, owner_client_id, entity, entity_id, data, created_at, published_at, request_id)
     SELECT e.event, e.owner_client_id, e.entity, made.id, e.data, now(), now(), e.request_id
       FROM made, orders.outbox e
      WHERE e.entity_id = $1 AND e.event = 'sales_order_created'`,
    [template, from, to],
  );
}

export async function preloadOrders(
  databaseUrl: string,
  partner: SeededPartner,
  count: number,
  log: (line: string) => void,
): Promise<PreloadFigures> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const started = Date.now();
  try {
    const template = await templateOrderId(client, partner.clientId);
    for (let from = 1; from <= count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK - 1);
      await insertChunk(client, template, from, to);
      if (to % (10 * CHUNK) === 0 || to === count)
        log(`preloaded ${to.toLocaleString("en")} of ${count.toLocaleString("en")} orders`);
    }
    await client.query("ANALYZE orders.orders, orders.order_items, orders.outbox");
    const { rows } = await client.query<{ bytes: string }>("SELECT pg_database_size(current_database()) AS bytes");
    return {
      orders: count,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      databaseMB: Math.round(Number(rows[0].bytes) / 1e5) / 10,
    };
  } finally {
    await client.end();
  }
}

const DRAIN_TIMEOUT_MS = 120_000;

/**
 * Waits until the orders outbox holds no unsent event: the relay and the webhooks consumer still
 * work through the previous measurement's events for a while, on the same CPUs.
 */
export async function outboxDrained(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const { rows } = await client.query<{ unsent: boolean }>(
        "SELECT EXISTS (SELECT 1 FROM orders.outbox WHERE published_at IS NULL) AS unsent",
      );
      if (!rows[0].unsent) return;
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await client.end();
  }
}

/** The `cursor` of page `page` of the partner's orders (keyset: the id the page before ends on). */
export async function pageCursor(databaseUrl: string, clientId: number, page: number): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `SELECT id FROM orders.orders WHERE client_id = $1 ORDER BY id OFFSET $2 LIMIT 1`,
      [clientId, (page - 1) * PAGE_LIMIT - 1],
    );
    if (!rows[0]) throw new Error(`the partner has fewer than ${(page - 1) * PAGE_LIMIT} orders: no page ${page}`);
    return encodeCursor(Number(rows[0].id));
  } finally {
    await client.end();
  }
}
