/**
 * POST /orders/batch through the orders action: one result per order in order, each what a single
 * POST of it would have answered (201, 409, 422 with the row's own paths, 403); reject_all writes
 * nothing anywhere unless every row is good; reject_failed_rows takes the good rows; the
 * Idempotency-Key covers the batch; one sales_order_created per order taken.
 */
import type { Knex } from "knex";
import { toProblem } from "../../shared/http/problem";
import type { BatchAnswer, BatchResult } from "../../services/orders/orders.batch-intake";
import type { TestBroker } from "../helpers/broker";
import { rowCounts } from "../helpers/crm-tenants";
import { backofficeOrder, partnerOrder, type Fixtures } from "../helpers/fixtures";
import { startOrdersWorld } from "../helpers/orders-world";

let t: TestBroker;
let f: Fixtures;
let db: Knex;

beforeAll(async () => ({ t, f, db } = await startOrdersWorld()));
afterAll(() => t?.stop());

type Policy = "reject_all" | "reject_failed_rows";

const batch = (orders: unknown[], errorPolicy: Policy, as = f.partner, idempotencyKey?: string) =>
  t.call<BatchAnswer>("orders.createBatch", { orders, errorPolicy }, as, idempotencyKey ? { idempotencyKey } : {});

/** Each result's index, status and, for a refusal, the paths its problem names. */
const shapes = (results: BatchResult[]) =>
  results.map((r) => [r.index, r.status, ...(r.problem?.errors ? [r.problem.errors.map((e) => e.path)] : [])]);

const createdEvents = async (ids: number[]) =>
  db
    .withSchema("orders")
    .table("outbox")
    .whereIn("entity_id", ids)
    .select<{ event: string; entity_id: number }[]>("event", "entity_id");

let n = 0;
/** A partner order with a fresh externalId. */
const fresh = (extra: Record<string, unknown> = {}): Record<string, unknown> =>
  partnerOrder(f, { externalId: `B-${Date.now()}-${++n}`, ...extra });

/** A partner order carrying its contact inline (registered by references when taken). */
const inline = (code: string) =>
  fresh({
    contact: {
      externalReference: code,
      firstName: "Ann",
      lastName: "Inline",
      email: `${code.toLowerCase()}@inline.test`,
    },
    customer: { name: `Inline ${code}` },
  });

describe("when a partner sends a batch with errorPolicy reject_failed_rows", () => {
  it("then the good rows are taken and each refused row gets the problem a single POST would, with its own paths and index", async () => {
    const first = fresh();
    const badQuantity = fresh({
      items: [{ externalReferenceId: f.packagingRefs[0].externalReference, orderedQuantity: -1 }],
    });
    const unknownRef = fresh({ items: [{ externalReferenceId: "NO-SUCH-REF", orderedQuantity: 1 }] });
    const catalogueId = fresh({ items: [{ packaging: f.packagingIds[0], orderedQuantity: 1 }] });
    const { results } = await batch(
      [first, badQuantity, { ...fresh(), externalId: first.externalId }, unknownRef, catalogueId, fresh()],
      "reject_failed_rows",
    );
    expect(shapes(results)).toEqual([
      [0, 201],
      [1, 422, ["items[0].orderedQuantity", "items[0].orderedQuantity"]],
      [2, 409],
      [3, 422, ["items[0].externalReferenceId"]],
      [4, 403],
      [5, 201],
    ]);
    const single = await t.call("orders.create", { ...badQuantity }, f.partner).then(
      () => ({}),
      (e: unknown) => toProblem(e).body,
    );
    expect(results[1].problem).toEqual({ ...single, index: 1 });
    expect(results[2].problem).toMatchObject({ status: 409, duplicateOfIndex: 0, index: 2 });
    expect(results[4].problem).toMatchObject({ status: 403, requiredScope: "catalogue", path: "items[0].packaging" });
    const taken = [results[0].order!, results[5].order!];
    expect(taken.map((o) => o.externalId)).toEqual([first.externalId, expect.any(String)]);
    expect(await t.call("orders.get", { id: taken[0].id }, f.partner)).toEqual(taken[0]);
    const events = await createdEvents(taken.map((o) => o.id));
    expect(events.map((e) => [e.event, e.entity_id]).sort()).toEqual(
      taken.map((o) => ["sales_order_created", o.id]).sort(),
    );
  });

  it("then a row whose externalId an earlier order has is a 409 naming that order", async () => {
    const earlier = fresh();
    const [{ order }] = (await batch([earlier], "reject_all")).results;
    const { results } = await batch([fresh(), earlier], "reject_failed_rows");
    expect(shapes(results)).toEqual([
      [0, 201],
      [1, 409],
    ]);
    expect(results[1].problem).toMatchObject({ existingOrderId: order!.id, existingOrderCode: order!.code });
  });
});

describe("when a batch names many records", () => {
  it("then references, crm and catalogue are each asked once for all its rows", async () => {
    const call = jest.spyOn(t.broker, "call");
    try {
      // Unknown records are never kept by orders' cache, so each must be asked for.
      const partnerRows = [1, 2, 3].map((i) =>
        fresh({ items: [{ externalReferenceId: `NONE-${Date.now()}-${i}`, orderedQuantity: 1 }] }),
      );
      const backofficeRows = [1, 2, 3].map((i) =>
        backofficeOrder(f, {
          contact: { id: 2_000_000_000 + i },
          items: [{ packaging: 2_000_000_000 + i, orderedQuantity: 1 }],
        }),
      );
      await batch(partnerRows, "reject_failed_rows");
      await batch(backofficeRows, "reject_failed_rows", f.backoffice);
      const asked = call.mock.calls.map(([action]) => String(action)).filter((a) => !a.startsWith("orders."));
      expect(asked.sort()).toEqual(["catalogue.packagingsByIds", "crm.contactsByIds", "references.resolveOrders"]);
    } finally {
      call.mockRestore();
    }
  });
});

describe("when a batch with errorPolicy reject_all has one refused row", () => {
  it("then nothing is written anywhere (no order, event, nor inline contact) and the good rows say they were not taken", async () => {
    const before = await rowCounts(db);
    const { results } = await batch(
      [inline(`IN-${Date.now()}-A`), fresh(), fresh({ items: [] }), inline(`IN-${Date.now()}-B`)],
      "reject_all",
    );
    expect(shapes(results)).toEqual([
      [0, 424],
      [1, 424],
      [2, 422, ["items"]],
      [3, 424],
    ]);
    expect(results[0].problem).toMatchObject({ type: "/problems/not-taken", refusedRows: [2] });
    expect(await rowCounts(db)).toEqual(before);
  });
});

describe("when every row of a reject_all batch is good, in both identification modes", () => {
  it("then all are taken, inline contacts registered once each, one sales_order_created per order", async () => {
    const code = `IN-${Date.now()}-OK`;
    const partnerRows = await batch([inline(code), inline(code), fresh()], "reject_all");
    expect(shapes(partnerRows.results)).toEqual([
      [0, 201],
      [1, 201],
      [2, 201],
    ]);
    const [a, b] = partnerRows.results.map((r) => r.order!);
    expect(a.contact.reference?.externalReference).toBe(code);
    expect(b.contact.reference?.id).toBe(a.contact.reference?.id);

    const backoffice = await batch([backofficeOrder(f), backofficeOrder(f)], "reject_all", f.backoffice);
    const orders = [...partnerRows.results, ...backoffice.results].map((r) => r.order!);
    expect(backoffice.results.map((r) => r.order?.contact.id)).toEqual([f.contactId, f.contactId]);
    expect(new Set(orders.map((o) => o.code)).size).toBe(orders.length);
    expect((await createdEvents(orders.map((o) => o.id))).length).toBe(orders.length);
  });
});

describe("when a batch is sent again", () => {
  it("then with the same Idempotency-Key the first answer is replayed and nothing is created", async () => {
    const key = `K-BATCH-${Date.now()}`;
    const orders = [fresh(), fresh({ items: [] }), fresh()];
    const first = await batch(orders, "reject_failed_rows", f.partner, key);
    const before = await rowCounts(db);
    expect(await batch(orders, "reject_failed_rows", f.partner, key)).toEqual(first);
    expect(await rowCounts(db)).toEqual(before);
    await expect(batch([fresh()], "reject_failed_rows", f.partner, key)).rejects.toMatchObject({
      code: 422,
      type: "IDEMPOTENCY_KEY_REUSED",
    });
  });

  it("then without a key each row's externalId is answered 409 with the order it made", async () => {
    const orders = [fresh(), fresh()];
    const first = await batch(orders, "reject_all");
    const before = await rowCounts(db);
    const again = await batch(orders, "reject_failed_rows");
    expect(again.results.map((r) => [r.status, r.problem?.existingOrderId])).toEqual(
      first.results.map((r) => [409, r.order!.id]),
    );
    expect(await rowCounts(db)).toEqual(before);
  });
});

describe("when a batch has no rows or more than 500", () => {
  it("then it is refused as a whole, naming `orders`", async () => {
    for (const orders of [[], Array.from({ length: 501 }, () => fresh())]) {
      await expect(batch(orders, "reject_all")).rejects.toMatchObject({
        code: 422,
        data: [expect.objectContaining({ field: "orders" })],
      });
    }
  });
});
