/**
 * POST /api/v1/orders/batch through the gateway, every answer checked against the OpenAPI
 * document (test/helpers/http.ts): the route reads bodies past the gateway's 1 MiB up to its own
 * limit (gateway/routes.ts), answers 413 beyond it, and refuses 501 orders naming `orders`.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BODY_LIMIT_BYTES } from "../../gateway/body-parser";
import { BATCH_BODY_LIMIT_BYTES } from "../../gateway/routes";
import knexFactory from "knex";
import type { BatchAnswer } from "../../services/orders/orders.batch-intake";
import { createApiWorld, partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { api, type ApiClient } from "../helpers/http";

const ADMIN_KEY = "orders-batch-http-admin-key-0123456789";
/** A call's usual time-out here: short, so that a batch held longer than it stays quick to test. */
const REQUEST_TIMEOUT_MS = 4_000;

let t: TestBroker;
let w: ApiWorld;
let partner: ApiClient;

beforeAll(async () => {
  t = await startTestBroker({
    services: ["gateway", "clients", "crm", "catalogue", "references", "orders"],
    env: { ADMIN_API_KEY: ADMIN_KEY, REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) },
  });
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  const base = api(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  w = await createApiWorld(base.as(ADMIN_KEY));
  partner = base.as(w.partnerKey);
}, 120_000);
afterAll(() => t?.stop());

let n = 0;
const order = (extra: Record<string, unknown> = {}) =>
  partnerOrderBody(w, { externalId: `H-${Date.now()}-${++n}`, ...extra });

describe("when a partner posts a batch over HTTP", () => {
  it("then a body larger than 1 MiB is read, and each order answered in order", async () => {
    // Orders of 100 items each, the last one refused: about 5 KiB an order.
    const items = Array.from({ length: 100 }, () => ({ externalReferenceId: w.packagingRefs[0], orderedQuantity: 1 }));
    const orders = Array.from({ length: 250 }, () => order({ items }));
    orders.push(order({ items: [{ externalReferenceId: "NO-SUCH-REF", orderedQuantity: 1 }] }));
    expect(JSON.stringify({ orders }).length).toBeGreaterThan(BODY_LIMIT_BYTES);
    const { status, body } = await partner.post<BatchAnswer>("/api/v1/orders/batch", {
      orders,
      errorPolicy: "reject_failed_rows",
    });
    expect(status).toBe(200);
    expect(body.results.map((r) => r.status)).toEqual([...orders.slice(1).map(() => 201), 422]);
    expect(body.results.map((r) => r.index)).toEqual(orders.map((_, i) => i));
  });

  it("then a body beyond the route's limit is refused 413", async () => {
    const { status, body } = await partner.request({
      method: "POST",
      path: "/api/v1/orders/batch",
      rawBody: JSON.stringify({ orders: [order({ externalReference: "x".repeat(BATCH_BODY_LIMIT_BYTES) })] }),
      headers: { "Content-Type": "application/json" },
    });
    expect(status).toBe(413);
    expect(body).toMatchObject({ type: "/problems/payload-too-large", limitBytes: BATCH_BODY_LIMIT_BYTES });
  });

  it("then 501 orders are refused as a whole with a 422 naming `orders`", async () => {
    const orders = Array.from({ length: 501 }, () => order());
    const { status, body } = await partner.post<{ errors: { path: string }[] }>("/api/v1/orders/batch", {
      orders,
      errorPolicy: "reject_all",
    });
    expect(status).toBe(422);
    expect(body.errors.map((e) => e.path)).toEqual(["orders"]);
  });

  it("then a batch held longer than a call's usual time-out is still answered", async () => {
    if (t.database.kind === "pglite") {
      // One process, one session: a second session holding a lock needs PostgreSQL.
      console.log("[batch] holding the orders table from a second session needs PostgreSQL");
      return;
    }
    // Another session keeps new orders out for longer than REQUEST_TIMEOUT_MS: the batch waits.
    const other = knexFactory({ client: "pg", connection: t.database.url, pool: { min: 0, max: 1 } });
    try {
      // Wrapped: a promise returned from the transaction would be awaited before it commits.
      const { sent } = await other.transaction(async (trx) => {
        await trx.raw("LOCK TABLE orders.orders IN SHARE MODE");
        const sent = partner.post<BatchAnswer>("/api/v1/orders/batch", {
          orders: [order(), order()],
          errorPolicy: "reject_all",
        });
        await new Promise((resolve) => setTimeout(resolve, REQUEST_TIMEOUT_MS + 1_000));
        return { sent };
      });
      const { status, body } = await sent;
      expect(status).toBe(200);
      expect(body.results.map((r) => r.status)).toEqual([201, 201]);
    } finally {
      await other.destroy();
    }
  });
});
