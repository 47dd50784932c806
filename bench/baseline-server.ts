/**
 * The benchmark's baseline: what `POST /api/v1/orders` costs with nothing but `node:http` and
 * `pg` — the same SQL statements as the services run for a partner-reference order, in the same
 * order and with the same parallelism (the reference/catalogue and the contact look-ups side by
 * side), the same snapshots and the same JSON answer; no framework, no authentication, no
 * validation, no message hops. Its own process:
 *
 *   DATABASE_URL=postgres://… PORT=… node dist/bench/baseline-server.js --client-id <partner id>
 *
 * The partner's client id is given, since there is no authentication to find it.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import { parseArgs } from "node:util";
import pg from "pg";
import { config } from "../shared/config/config";
import { presentPackaging, taxesByProduct } from "../services/catalogue/catalogue.representation";
import { codeDay, orderCode } from "../services/orders/orders.code";
import type { AddressInput } from "../services/orders/orders.params";
import type { ItemRow, OrderRow } from "../services/orders/orders.repository";
import { presentOrder, type Order } from "../services/orders/orders.representation";
import type { ContactSnapshot } from "../services/orders/orders.snapshots";
import * as sql from "./baseline-statements";

// As shared/database/db.ts does for the services: numeric columns (rates, unit factors) come back as numbers.
const NUMERIC = 1700;
pg.types.setTypeParser(NUMERIC, Number.parseFloat);

/** The benchmark's order, trusted as it is (no validation: that is the point of a baseline). */
interface OrderBody {
  externalId?: string;
  externalReference?: string;
  contact: { externalReferenceId: string };
  invoicingAddress: AddressInput;
  deliveryAddress: AddressInput;
  items: { externalReferenceId: string; orderedQuantity: number }[];
}

class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type NewItem = Omit<ItemRow, "order_id">;

/**
 * The service keeps packagings (immutable) and contacts in memory once read (references'
 * caches), so in steady state it reads neither per order; the baseline does the same, with plain
 * Maps, so that both run the same statements per order.
 */
const knownPackagings = new Map<number, ReturnType<typeof presentPackaging>>();
const knownContacts = new Map<number, Awaited<ReturnType<typeof sql.findContacts>>[number]>();

async function packagingsByIds(
  pool: pg.Pool,
  ids: number[],
): Promise<Map<number, ReturnType<typeof presentPackaging>>> {
  const missing = ids.filter((id) => !knownPackagings.has(id));
  if (missing.length > 0) {
    const rows = await sql.findPackagings(pool, missing);
    const taxes = taxesByProduct(await sql.findProductTaxes(pool, [...new Set(rows.map((p) => p.product_id))]));
    for (const p of rows) knownPackagings.set(p.id, presentPackaging(p, taxes));
  }
  return knownPackagings;
}

async function resolveItems(pool: pg.Pool, clientId: number, items: OrderBody["items"]): Promise<NewItem[]> {
  const references = await sql.findPackagingReferences(pool, clientId, [
    ...new Set(items.map((i) => i.externalReferenceId)),
  ]);
  const packagings = await packagingsByIds(pool, [...new Set(references.map((r) => r.packaging_id))]);
  const byCode = new Map(references.map((r) => [r.external_reference, r]));
  return items.map((item, i) => {
    const ref = byCode.get(item.externalReferenceId);
    const packaging = ref && packagings.get(ref.packaging_id);
    if (!ref || !packaging) throw new Refused(422, `unknown packaging reference ${item.externalReferenceId}`);
    return {
      position: i + 1,
      ordered_quantity: item.orderedQuantity,
      packaging_id: packaging.id,
      packaging,
      packaging_reference: { id: ref.id, externalReference: ref.external_reference, label: ref.label },
    };
  });
}

async function resolveContact(
  pool: pg.Pool,
  clientId: number,
  code: string,
): Promise<{ contact: ContactSnapshot; customer: { id: number; name: string } }> {
  const [ref] = await sql.findContactReferences(pool, clientId, [code]);
  if (!ref) throw new Refused(422, `unknown contact reference ${code}`);
  let c = knownContacts.get(ref.contact_id);
  if (!c) {
    [c] = await sql.findContacts(pool, [ref.contact_id]);
    knownContacts.set(c.id, c);
  }
  return {
    contact: {
      id: c.id,
      firstName: c.first_name,
      lastName: c.last_name,
      email: c.email,
      reference: { id: ref.id, externalReference: ref.external_reference },
    },
    customer: { id: c.customer_id, name: c.customer_name },
  };
}

async function placeOrder(pool: pg.Pool, clientId: number, body: OrderBody, requestId: string): Promise<Order> {
  const [items, { contact, customer }] = await Promise.all([
    resolveItems(pool, clientId, body.items),
    resolveContact(pool, clientId, body.contact.externalReferenceId),
  ]);
  const day = codeDay(new Date());
  const { codeNumber, id, at } = await sql.reserveOrder(pool, day);
  const row: OrderRow = {
    id,
    code: orderCode(day, codeNumber),
    client_id: clientId,
    status: "pending",
    version: 1,
    external_id: body.externalId ?? null,
    external_reference: body.externalReference ?? null,
    contact,
    customer,
    invoicing_address: body.invoicingAddress,
    delivery_address: body.deliveryAddress,
    created_at: at,
    updated_at: at,
    validated_at: null,
    cancelled_at: null,
    // No broker sends its calls again: nothing to recognise.
    taken_by_call: null,
  };
  const itemRows = items.map((i) => ({ ...i, order_id: id }));
  const created = presentOrder(row, itemRows);
  try {
    // One statement: atomic without BEGIN and COMMIT, as the service writes it.
    await sql.insertOrder(pool, row, itemRows, {
      event: "sales_order_created",
      ownerClientId: clientId,
      entityId: id,
      data: created,
      requestId,
    });
    return created;
  } catch (err) {
    // As the service: a duplicate externalId is refused by the unique index, not by a query first.
    if ((err as { code?: string }).code === "23505") throw new Refused(409, "duplicate externalId");
    throw err;
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req
      .on("data", (c: Buffer) => chunks.push(c))
      .on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
      .on("error", reject);
  });
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function main(): void {
  const { values } = parseArgs({ options: { "client-id": { type: "string" } } });
  const clientId = Number(values["client-id"]);
  if (!Number.isInteger(clientId) || clientId < 1) throw new Error("--client-id <the partner's client id> is required");
  const cfg = config();
  const pool = new pg.Pool({ connectionString: cfg.databaseUrl, max: cfg.databasePoolMax });

  // Orders still being written when the load stops (their client already gone) finish before the pool closes.
  const inFlight = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/healthz") return send(res, 200, { status: "ok" });
    if (req.method !== "POST" || req.url !== "/api/v1/orders")
      return send(res, 404, { error: "only POST /api/v1/orders" });
    const work = readBody(req)
      .then((text) => placeOrder(pool, clientId, JSON.parse(text) as OrderBody, randomUUID()))
      .then((order) => send(res, 201, order, { Location: `/api/v1/orders/${order.id}` }))
      .catch((err: unknown) => {
        if (err instanceof Refused) return send(res, err.status, { error: err.message });
        console.error(err);
        send(res, 500, { error: "internal" });
      })
      .finally(() => inFlight.delete(work));
    inFlight.add(work);
  });
  server.listen(cfg.port, cfg.host);

  process.on("SIGTERM", () => {
    server.close();
    void Promise.allSettled([...inFlight])
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
}

main();
