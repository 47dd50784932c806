import knexFactory, { type Knex } from "knex";
import { Context } from "moleculer";
import { fieldErrorsFromValidator } from "../../shared/http/problem";
import type { Order } from "../../services/orders/orders.representation";
import { reserveOrders } from "../../services/orders/orders.repository";
import type { RequestMeta } from "../../shared/security/auth";
import { principal, type TestBroker } from "../helpers/broker";
import { ADDRESS, backofficeOrder, partnerOrder, type Fixtures } from "../helpers/fixtures";
import { startOrdersWorld } from "../helpers/orders-world";

let t: TestBroker;
let f: Fixtures;
let db: Knex;

beforeAll(async () => ({ t, f, db } = await startOrdersWorld()));
afterAll(() => t?.stop());

const create = (body: unknown, as = f.partner, idempotencyKey?: string) =>
  t.call<Order>("orders.create", body, as, idempotencyKey ? { idempotencyKey } : {});

const rejection = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    const e = err as { code: number; type: string; data?: { errors?: { path: string; message: string }[] } };
    return { status: e.code, type: e.type, paths: (e.data?.errors ?? []).map((x) => x.path), data: e.data };
  }
  throw new Error("expected a rejection");
};

/** An outbox row, as these tests read it. */
type OutboxRow = { event: string; data: unknown };

const rowCounts = async () => {
  type Count = { n: number | string }[];
  const [o] = await db.withSchema("orders").table("orders").count<Count>({ n: "*" });
  const [i] = await db.withSchema("orders").table("order_items").count<Count>({ n: "*" });
  const [e] = await db.withSchema("orders").table("outbox").count<Count>({ n: "*" });
  return { orders: Number(o.n), items: Number(i.n), events: Number(e.n) };
};

describe("when a partner names everything by its own references", () => {
  it("then the order is created pending, with a code, snapshots and a sales_order_created event", async () => {
    const order = await create(partnerOrder(f, { externalId: "P-ok-1" }));
    expect(order.code).toMatch(/^ORD-\d{8}-\d{6}$/);
    expect(order.status).toBe("pending");
    expect(order.contact).toMatchObject({
      firstName: "Grace",
      reference: { id: f.contactRef.id, externalReference: f.contactRef.externalReference },
    });
    expect(order.items.map((i) => [i.position, i.orderedQuantity, i.packaging.id])).toEqual([
      [1, 1, f.packagingIds[0]],
      [2, 2, f.packagingIds[1]],
      [3, 3, f.packagingIds[2]],
    ]);
    expect(order.items[0].packaging.product.taxes).toEqual([
      { name: "VAT", rate: 20, vat: true },
      { name: "Eco", rate: 0.5, vat: false },
    ]);
    expect(order.items[0].packagingReference).toMatchObject({ id: f.packagingRefs[0].id });
    expect(await t.call("orders.get", { id: order.id }, f.partner)).toEqual(order);
    const events: OutboxRow[] = await db.withSchema("orders").table("outbox").where({ entity_id: order.id });
    expect(events.map((e) => e.event)).toEqual(["sales_order_created"]);
    expect(events[0].data).toEqual(order);
  });

  it("then internal ids, and external ids given as record ids, work too", async () => {
    const order = await create({
      ...partnerOrder(f),
      contact: { internalReferenceId: String(f.contactRef.id) },
      items: [
        { internalReferenceId: String(f.packagingRefs[1].id), orderedQuantity: 1 },
        { externalReferenceId: String(f.packagingRefs[2].id), orderedQuantity: 0.125 },
      ],
    });
    expect(order.contact.reference?.id).toBe(f.contactRef.id);
    expect(order.items.map((i) => i.packagingReference?.id)).toEqual([f.packagingRefs[1].id, f.packagingRefs[2].id]);
    expect(order.items[1].orderedQuantity).toBe(0.125);
  });

  it("then sending the contact with the order creates its reference once and reuses it", async () => {
    const inline = {
      ...partnerOrder(f),
      contact: { externalReference: "INLINE-1", firstName: "Alan", lastName: "Turing", email: "alan@bletchley.test" },
      customer: { name: "Bletchley" },
    };
    const first = await create(inline);
    const second = await create({ ...inline, contact: { ...inline.contact, lastName: "M. Turing" } });
    expect(first.contact.reference?.externalReference).toBe("INLINE-1");
    expect(second.contact.reference?.id).toBe(first.contact.reference?.id);
    expect(second.contact.lastName).toBe("M. Turing");
    expect(first.customer.name).toBe("Bletchley");
  });
});

describe("when a contact's names change after references cached it", () => {
  it("then the next order naming it by reference snapshots the new names", async () => {
    const inline = (lastName: string) => ({
      ...partnerOrder(f),
      contact: { externalReference: "CACHED-1", firstName: "Kathleen", lastName, email: "kathleen@booth.test" },
      customer: { name: "Booth Ltd" },
    });
    const byReference = { ...partnerOrder(f), contact: { externalReferenceId: "CACHED-1" } };
    await create(inline("Britten"));
    expect((await create(byReference)).contact.lastName).toBe("Britten");
    await create(inline("Booth"));
    expect((await create(byReference)).contact.lastName).toBe("Booth");
  });

  it("then an order naming a reference re-pointed at another contact snapshots that contact (orders keeps resolved references)", async () => {
    const register = (email: string) =>
      t.call<{ reference: { contact: { id: number } } }>("references.upsertContactReference", {
        clientId: f.partner.clientId,
        contact: { externalReference: "REPOINTED-1", firstName: "Alan", lastName: "Turing", email },
        customer: { name: "Bletchley" },
      });
    const byReference = { ...partnerOrder(f), contact: { externalReferenceId: "REPOINTED-1" } };
    const first = await register("alan@bletchley.test");
    expect((await create(byReference)).contact.id).toBe(first.reference.contact.id);
    expect((await create(byReference)).contact.id).toBe(first.reference.contact.id);
    const second = await register("alan@manchester.test");
    expect(second.reference.contact.id).not.toBe(first.reference.contact.id);
    expect((await create(byReference)).contact).toMatchObject({
      id: second.reference.contact.id,
      email: "alan@manchester.test",
    });
  });
});

describe("when a back-office client names everything by CRM and catalogue ids", () => {
  it("then the order snapshots the CRM contact, its customer and the packagings", async () => {
    const order = await create(backofficeOrder(f), f.backoffice);
    expect(order.contact).toMatchObject({ id: f.contactId, firstName: "Ada", reference: null });
    expect(order.items.map((i) => i.packaging.id)).toEqual([f.packagingIds[0], f.packagingIds[1]]);
    expect(order.items[1].orderedQuantity).toBe(1.5);
  });

  it("then an order after the CRM contact's names changed snapshots the new names (orders keeps the contacts it resolved)", async () => {
    const contact = await t.call<{ email: string; lastName: string; customer: { name: string } }>(
      "crm.getContact",
      { id: f.contactId },
      f.backoffice,
    );
    const rename = (lastName: string) =>
      t.call("crm.upsertContact", {
        firstName: "Ada",
        lastName,
        email: contact.email,
        customerName: contact.customer.name,
      });
    expect((await create(backofficeOrder(f), f.backoffice)).contact.lastName).toBe(contact.lastName);
    await rename("King");
    try {
      expect((await create(backofficeOrder(f), f.backoffice)).contact).toMatchObject({
        id: f.contactId,
        lastName: "King",
      });
    } finally {
      await rename(contact.lastName);
    }
  });
});

describe("when the identification is wrong", () => {
  it.each([
    ["no contact mode", { contact: {} }, 422, ["contact"]],
    ["two contact modes", { contact: { id: 1, externalReferenceId: "x" } }, 422, ["contact"]],
    [
      "an unknown contact reference",
      { contact: { externalReferenceId: "NOPE" } },
      422,
      ["contact.externalReferenceId"],
    ],
    ["an item with no mode", { items: [{ orderedQuantity: 1 }] }, 422, ["items[0]"]],
    [
      "an item with two modes",
      { items: [{ externalReferenceId: "a", internalReferenceId: "1", orderedQuantity: 1 }] },
      422,
      ["items[0]"],
    ],
  ])("then %s is refused, naming the field", async (_name, change, status, paths) => {
    const before = await rowCounts();
    const r = await rejection(create({ ...partnerOrder(f), ...change }));
    expect([r.status, r.paths]).toEqual([status, paths]);
    expect(await rowCounts()).toEqual(before);
  });

  it("then another partner's contact reference is as unknown as a missing one", async () => {
    const byExternal = await rejection(
      create({ ...partnerOrder(f), contact: { externalReferenceId: f.otherContactRef.externalReference } }),
    );
    const byId = await rejection(
      create({ ...partnerOrder(f), contact: { internalReferenceId: String(f.otherContactRef.id) } }),
    );
    expect([byExternal.status, byExternal.paths]).toEqual([422, ["contact.externalReferenceId"]]);
    expect([byId.status, byId.paths]).toEqual([422, ["contact.internalReferenceId"]]);
  });

  it("then unknown, foreign and inactive packaging references are all named at once", async () => {
    const before = await rowCounts();
    const r = await rejection(
      create({
        ...partnerOrder(f),
        items: [
          { externalReferenceId: f.packagingRefs[0].externalReference, orderedQuantity: 1 },
          { externalReferenceId: "UNKNOWN", orderedQuantity: 1 },
          { externalReferenceId: f.otherPackagingRef.externalReference, orderedQuantity: 1 },
          { internalReferenceId: String(f.inactivePackagingRef.id), orderedQuantity: 1 },
        ],
      }),
    );
    expect([r.status, r.paths]).toEqual([
      422,
      ["items[1].externalReferenceId", "items[2].externalReferenceId", "items[3].internalReferenceId"],
    ]);
    expect(await rowCounts()).toEqual(before);
  });

  it("then an unknown catalogue packaging or CRM contact is named", async () => {
    const r = await rejection(
      create(
        backofficeOrder(f, { contact: { id: 987654 }, items: [{ packaging: 987654, orderedQuantity: 1 }] }),
        f.backoffice,
      ),
    );
    expect(r.status).toBe(422);
    expect(r.paths.sort()).toEqual(["contact.id", "items[0].packaging"].sort());
  });

  it.each([
    ["contact.id without crm", "partner", backofficeOrder, "crm"],
    ["packaging ids without catalogue", "crmOnly", (fx: Fixtures) => backofficeOrder(fx), "catalogue"],
    ["references without partner", "backoffice", partnerOrder, "partner"],
  ] as const)("then %s is 403", async (_name, who, body, scope) => {
    const as =
      who === "partner"
        ? f.partner
        : who === "backoffice"
          ? f.backoffice
          : principal("backoffice", ["crm", "orders:write"]);
    const r = await rejection(create(body(f), as));
    expect(r.status).toBe(403);
    expect(r.data).toMatchObject({ requiredScope: scope });
  });

  it("then a client without orders:write cannot create at all", async () => {
    const r = await rejection(create(partnerOrder(f), principal("partner", ["partner"])));
    expect(r.status).toBe(403);
  });
});

describe("when the payload itself is malformed", () => {
  it.each([
    ["an unknown top-level field", { colour: "blue" }, "colour"],
    ["an unknown item field", { items: [{ packaging: 1, orderedQuantity: 1, price: 3 }] }, "items[0].price"],
    ["a zero quantity", { items: [{ externalReferenceId: "x", orderedQuantity: 0 }] }, "items[0].orderedQuantity"],
    ["four decimals", { items: [{ externalReferenceId: "x", orderedQuantity: 1.0001 }] }, "items[0].orderedQuantity"],
    ["no items", { items: [] }, "items"],
    ["a bad country", { deliveryAddress: { ...ADDRESS, country: "France" } }, "deliveryAddress.country"],
    ["a missing address", { invoicingAddress: undefined }, "invoicingAddress"],
  ])("then %s is a 422 naming it", async (_name, change, path) => {
    const r = await rejection(create({ ...partnerOrder(f), ...change }));
    expect(r.status).toBe(422);
    expect(r.type).toBe("VALIDATION_ERROR");
    // The gateway names fields with this mapping (unknown keys one by one).
    expect(fieldErrorsFromValidator(r.data).map((e) => e.path)).toContain(path);
  });

  it("then 1,001 items are refused and 1,000 are taken", async () => {
    const item = { externalReferenceId: f.packagingRefs[0].externalReference, orderedQuantity: 1 };
    expect((await rejection(create({ ...partnerOrder(f), items: Array(1001).fill(item) }))).status).toBe(422);
    const big = await create({ ...partnerOrder(f), items: Array(1000).fill(item) });
    expect(big.items).toHaveLength(1000);
  });
});

describe("when the same order is sent twice", () => {
  it("then the same Idempotency-Key and body replay the first order", async () => {
    const body = partnerOrder(f, { externalReference: "IDEM-1" });
    const first = await create(body, f.partner, "key-1");
    const again = await create(JSON.parse(JSON.stringify(body)), f.partner, "key-1");
    expect(again).toEqual(first);
    expect(await db.withSchema("orders").table("orders").where({ external_reference: "IDEM-1" })).toHaveLength(1);
  });

  it("then only the replay's answer carries Idempotent-Replayed: true", async () => {
    const body = partnerOrder(f, { externalReference: "IDEM-HEADER" });
    // moleculer keeps the caller's meta object as the call's meta, so the answer's headers show in it.
    const send = async () => {
      const meta: Partial<RequestMeta> = { client: f.partner, idempotencyKey: "key-header" };
      await t.broker.call("orders.create", body, { meta });
      return meta.$responseHeaders ?? {};
    };
    expect(await send()).not.toHaveProperty("Idempotent-Replayed");
    // The replay states the version of the order it replays (the first answer's).
    expect(await send()).toEqual({ ETag: '"1"', "Idempotent-Replayed": "true" });
  });

  it("then the same key with another body is a 422", async () => {
    await create(partnerOrder(f, { externalReference: "IDEM-2" }), f.partner, "key-2");
    const r = await rejection(create(partnerOrder(f, { externalReference: "IDEM-2b" }), f.partner, "key-2"));
    expect([r.status, r.type]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
  });

  it("then one key used by another client is independent", async () => {
    const mine = await create(partnerOrder(f, { externalReference: "IDEM-3" }), f.partner, "shared-key");
    const theirs = await create(backofficeOrder(f), f.backoffice, "shared-key");
    expect(theirs.id).not.toBe(mine.id);
  });

  it("then twenty concurrent sends with one key make one order", async () => {
    const body = partnerOrder(f, { externalReference: "IDEM-RACE" });
    const results = await Promise.all(Array.from({ length: 20 }, () => create(body, f.partner, "race-key")));
    expect(new Set(results.map((o) => o.id)).size).toBe(1);
  });

  it("then a second order with the same externalId is a 409 naming the existing order", async () => {
    const first = await create(partnerOrder(f, { externalId: "EXT-DUP" }));
    const r = await rejection(create(partnerOrder(f, { externalId: "EXT-DUP" })));
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ existingOrderId: first.id, existingOrderCode: first.code });
    // Another client may use the same externalId.
    expect((await create(backofficeOrder(f, { externalId: "EXT-DUP" }), f.backoffice)).id).not.toBe(first.id);
  });
});

describe("when the broker sends an order's call again while its first attempt is still writing", () => {
  it("then the repeat answers the order the first attempt took, and another request with the externalId is a 409", async () => {
    const body = partnerOrder(f, { externalId: "EXT-REPEAT" });
    // The gateway's request is the calls' parent; a repeat the broker sends is a copy of the call.
    const request = Context.create(t.broker);
    const attempt = () =>
      t.broker.call<Order, unknown>("orders.create", body, { meta: { client: f.partner }, parentCtx: request });
    // Both at once: one waits on the externalId's unique index until the other commits.
    const [first, repeat] = await Promise.all([attempt(), attempt()]);
    expect(repeat).toEqual(first);
    expect(await db.withSchema("orders").table("orders").where({ external_id: "EXT-REPEAT" })).toHaveLength(1);
    expect(await db.withSchema("orders").table("outbox").where({ entity_id: first.id })).toHaveLength(1);

    const r = await rejection(create(JSON.parse(JSON.stringify(body))));
    expect([r.status, r.data]).toEqual([409, { existingOrderId: first.id, existingOrderCode: first.code }]);
  });
});

describe("when orders are created concurrently", () => {
  it("then every code is distinct", async () => {
    const orders = await Promise.all(
      Array.from({ length: 60 }, (_, i) => create(partnerOrder(f, { externalReference: `C-${i}` }))),
    );
    expect(new Set(orders.map((o) => o.code)).size).toBe(60);
  });
});

describe("when the day's counter hands out numbers", () => {
  const DAY = "19991231";

  it("then a reservation takes consecutive numbers, and the next one follows them", async () => {
    const first = await reserveOrders(db, DAY, 3);
    const next = await reserveOrders(db, DAY, 1);
    const numbers = [...first, ...next].map((r) => r.codeNumber);
    expect(numbers).toEqual([numbers[0], numbers[0] + 1, numbers[0] + 2, numbers[0] + 3]);
  });

  it("then its asynchronous commit is its own: the connection's next statements commit synchronously again", async () => {
    // One connection, so that what the counter set would still be there for the next statement.
    const single =
      t.database.kind === "pglite"
        ? db
        : knexFactory({ client: "pg", connection: t.database.url, pool: { min: 1, max: 1 } });
    try {
      await reserveOrders(single, DAY, 1);
      const { rows } = await single.raw<{ rows: { synchronous_commit: string }[] }>("SHOW synchronous_commit");
      expect(rows[0].synchronous_commit).toBe("on");
    } finally {
      if (single !== db) await single.destroy();
    }
  });

  it("then it refuses to run inside a transaction, whose whole commit it would make asynchronous", async () => {
    await db.transaction(async (trx) => {
      await expect(reserveOrders(trx, DAY, 1)).rejects.toThrow(/outside a transaction/);
    });
  });
});

describe("when an order moves through its states", () => {
  const move = (action: string, id: number, as = f.backoffice) => t.call<Order>(`orders.${action}`, { id }, as);
  /** The order's events in the outbox, oldest first. */
  const eventsOf = (orderId: number): Promise<OutboxRow[]> =>
    db.withSchema("orders").table("outbox").where({ entity_id: orderId }).orderBy("id");

  it("then pending → validated → cancelled is allowed, each with its event", async () => {
    const order = await create(partnerOrder(f));
    const validated = await move("validate", order.id);
    expect(validated).toMatchObject({ status: "validated", code: order.code });
    expect(validated.validatedAt).not.toBeNull();
    const cancelled = await move("cancel", order.id);
    expect(cancelled.status).toBe("cancelled");
    const events = await eventsOf(order.id);
    expect(events.map((e) => e.event)).toEqual([
      "sales_order_created",
      "sales_order_validated",
      "sales_order_cancelled",
    ]);
    expect(events[1].data).toMatchObject({ code: order.code, status: "validated" });
  });

  it("then pending → cancelled is allowed", async () => {
    const order = await create(partnerOrder(f));
    expect((await move("cancel", order.id)).status).toBe("cancelled");
  });

  it.each([
    ["validate a validated order", ["validate"], "validate"],
    ["validate a cancelled order", ["cancel"], "validate"],
    ["cancel a cancelled order", ["cancel"], "cancel"],
  ])("then trying to %s is a 409", async (_name, before, attempt) => {
    const order = await create(partnerOrder(f));
    for (const m of before) await move(m, order.id);
    const r = await rejection(move(attempt, order.id));
    expect(r.status).toBe(409);
  });

  it("then moves sent at once, some not allowed, commit together: each one made once with its event, each refused one writing nothing", async () => {
    const orders = await Promise.all(Array.from({ length: 12 }, () => create(partnerOrder(f))));
    const tries = orders.flatMap((o) => ["validate", "validate", "cancel"].map((m) => ({ id: o.id, m })));
    const answers = await Promise.all(
      [...tries, { id: 99999999, m: "validate" }].map(({ id, m }) =>
        move(m, id).then(
          (order) => ({ id, m, status: 200, order }),
          (err: { code?: number }) => ({ id, m, status: err.code ?? 500, order: undefined }),
        ),
      ),
    );
    expect(answers.at(-1)?.status).toBe(404);
    for (const o of orders) {
      const own = answers.filter((a) => a.id === o.id);
      expect(own.every((a) => a.status === 200 || a.status === 409)).toBe(true);
      const made = own.filter((a) => a.status === 200).sort((a, b) => a.order!.version - b.order!.version);
      // Versions 2, 3, … in the order the moves were made, each with its event and nothing more.
      expect(made.map((a) => a.order!.version)).toEqual(made.map((_, i) => i + 2));
      const events = await eventsOf(o.id);
      expect(events.map((e) => e.event)).toEqual([
        "sales_order_created",
        ...made.map((a) => (a.m === "validate" ? "sales_order_validated" : "sales_order_cancelled")),
      ]);
      const stored = await t.call<Order>("orders.get", { id: o.id }, f.backoffice);
      expect([stored.status, stored.version]).toEqual(["cancelled", made.length + 1]);
    }
  });

  it("then moving needs orders:manage, and an unknown order is 404", async () => {
    const order = await create(partnerOrder(f));
    expect((await rejection(move("validate", order.id, f.partner))).status).toBe(403);
    expect((await rejection(move("validate", 99999999))).status).toBe(404);
  });
});

describe("when orders are read", () => {
  it("then a partner sees only its own orders and the back office sees all", async () => {
    const mine = await create(partnerOrder(f));
    const theirs = await create(
      {
        ...partnerOrder(f),
        contact: { externalReferenceId: f.otherContactRef.externalReference },
        items: [{ externalReferenceId: f.otherPackagingRef.externalReference, orderedQuantity: 1 }],
      },
      f.otherPartner,
    );
    expect((await rejection(t.call("orders.get", { id: theirs.id }, f.partner))).status).toBe(404);
    const page = await t.call<{ items: Order[] }>("orders.list", { limit: 500 }, f.otherPartner);
    expect(page.items.map((o) => o.id)).toEqual([theirs.id]);
    expect((await t.call<Order>("orders.get", { id: mine.id }, f.backoffice)).id).toBe(mine.id);
  });
});
