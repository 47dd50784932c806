import type { Knex } from "knex";
import { fieldErrorsFromValidator } from "../../shared/http/problem";
import type { Order } from "../../services/orders/orders.representation";
import type { Principal } from "../../shared/security/auth";
import type { TestBroker } from "../helpers/broker";
import { partnerOrder, type Fixtures } from "../helpers/fixtures";
import { startOrdersWorld } from "../helpers/orders-world";

let t: TestBroker;
let f: Fixtures;
let db: Knex;

beforeAll(async () => ({ t, f, db } = await startOrdersWorld()));
afterAll(() => t?.stop());

type Page = { items: Order[]; nextCursor: string | null };

/** The query as the gateway hands it on: every value a string. */
const list = (query: Record<string, string>, as: Principal = f.partner) => t.call<Page>("orders.list", query, as);

/** Every page of a query, following the cursor as a client follows `Link`. */
async function allPages(query: Record<string, string>, as: Principal = f.partner): Promise<Order[]> {
  const orders: Order[] = [];
  let cursor: string | null = null;
  do {
    const page: Page = await list(cursor ? { ...query, cursor } : query, as);
    expect(page.items.length).toBeLessThanOrEqual(Number(query.limit ?? 50));
    orders.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return orders;
}

const rejection = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    const e = err as { code: number; type: string; data?: unknown };
    const paths =
      e.type === "VALIDATION_ERROR"
        ? fieldErrorsFromValidator(e.data).map((x) => x.path)
        : ((e.data as { errors?: { path: string }[] } | undefined)?.errors ?? []).map((x) => x.path);
    return { status: e.code, paths };
  }
  throw new Error("expected a rejection");
};

const place = (extra: Record<string, unknown>, as = f.partner) =>
  t.call<Order>("orders.create", partnerOrder(f, extra), as);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("when a partner looks up what it sent", () => {
  it("then externalId, externalReference and code each find its own order, and nobody else's", async () => {
    const order = await place({ externalId: "LOOKUP-1", externalReference: "PO-LOOKUP-1" });
    await place({ externalId: "LOOKUP-2", externalReference: "PO-LOOKUP-2" });
    const queries: Record<string, string>[] = [
      { externalId: "LOOKUP-1" },
      { externalReference: "PO-LOOKUP-1" },
      { code: order.code },
    ];
    for (const query of queries) {
      expect((await list(query)).items).toEqual([order]);
      expect((await list(query, f.otherPartner)).items).toEqual([]);
      expect((await list(query, f.backoffice)).items.map((o) => o.id)).toEqual([order.id]);
    }
    expect((await list({ externalId: "LOOKUP-1", status: "validated" })).items).toEqual([]);
    expect((await list({ externalId: "NO-SUCH-ORDER" })).items).toEqual([]);
  });
});

describe("when a partner asks what changed since its last sync", () => {
  it("then updatedSince answers the orders created or moved since, in the order of their last change", async () => {
    const first = await place({ externalReference: "SYNC" });
    const second = await place({ externalReference: "SYNC" });
    await pause(20);
    const lastSync = new Date().toISOString();
    await pause(20);
    const third = await place({ externalReference: "SYNC" });
    await t.call("orders.validate", { id: first.id }, f.backoffice);
    const changed = await allPages({ externalReference: "SYNC", updatedSince: lastSync, limit: "1" });
    expect(changed.map((o) => [o.id, o.status])).toEqual([
      [third.id, "pending"],
      [first.id, "validated"],
    ]);
    const newestFirst = await allPages({ externalReference: "SYNC", updatedSince: lastSync, order: "desc" });
    expect(newestFirst.map((o) => o.id)).toEqual([first.id, third.id]);
    expect((await list({ updatedSince: lastSync }, f.otherPartner)).items).toEqual([]);
    expect(changed.map((o) => o.id)).not.toContain(second.id);
  });
});

describe("when pages of a time range are followed", () => {
  it("then every order comes once, in either direction, even when many share the same instant", async () => {
    const placed: Order[] = [];
    for (let i = 0; i < 7; i++) placed.push(await place({ externalReference: "RANGE" }));
    const ids = placed.map((o) => o.id);
    // Four of them created at the very same microsecond: only the id tells them apart.
    await db
      .withSchema("orders")
      .table("orders")
      .whereIn("id", ids.slice(1, 5))
      .update({ created_at: db.raw("'2026-11-27 10:00:00.123456+00'::timestamptz") });
    await db
      .withSchema("orders")
      .table("orders")
      .whereIn("id", ids.slice(5))
      .update({ created_at: db.raw("'2026-11-27 10:00:00.123457+00'::timestamptz") });
    await db
      .withSchema("orders")
      .table("orders")
      .where("id", ids[0])
      .update({ created_at: db.raw("'2026-11-27 09:00:00+00'::timestamptz") });
    const range = { externalReference: "RANGE", createdSince: "2026-11-27T09:30:00+00:00", limit: "2" };
    expect((await allPages(range)).map((o) => o.id)).toEqual(ids.slice(1));
    expect((await allPages({ ...range, order: "desc" })).map((o) => o.id)).toEqual(ids.slice(1).reverse());
    const until = { ...range, createdSince: "2026-11-27", createdUntil: "2026-11-27T10:00:00.123457Z" };
    expect((await allPages(until)).map((o) => o.id)).toEqual(ids.slice(0, 5));
    await t.call("orders.cancel", { id: ids[2] }, f.backoffice);
    expect((await allPages({ ...range, status: "cancelled" })).map((o) => o.id)).toEqual([ids[2]]);
    expect((await allPages({ ...range, status: "pending", order: "desc" })).map((o) => o.id)).toEqual(
      [ids[1], ...ids.slice(3)].reverse(),
    );
  });

  it("then without a time range the pages are in id order, newest first with order=desc", async () => {
    const all = await allPages({ limit: "3" });
    const ids = all.map((o) => o.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect((await allPages({ limit: "3", order: "desc" })).map((o) => o.id)).toEqual([...ids].reverse());
    expect((await allPages({ limit: "2" }, f.otherPartner)).length).toBe(0);
  });
});

describe("when a lookup is malformed", () => {
  it.each([
    ["createdSince", "yesterday"],
    ["createdSince", "2026-02-30"],
    ["createdUntil", "2026-11-27T25:00Z"],
    ["updatedSince", "2026-11-27T10:00:00"],
    ["order", "sideways"],
    ["externalId", ""],
    ["cursor", "bm90LW91cnM"],
  ])("then %s=%j is a 422 naming it", async (name, value) => {
    expect(await rejection(list({ [name]: value }))).toEqual({ status: 422, paths: [name] });
  });

  it("then a cursor of one order used with a lookup in another is a 422 naming cursor", async () => {
    await place({ externalReference: "MIXED" });
    await place({ externalReference: "MIXED" });
    const byId = await list({ externalReference: "MIXED", limit: "1" });
    expect(byId.nextCursor).not.toBeNull();
    const query = { externalReference: "MIXED", limit: "1", updatedSince: "2000-01-01", cursor: byId.nextCursor! };
    expect(await rejection(list(query))).toEqual({ status: 422, paths: ["cursor"] });
  });
});
