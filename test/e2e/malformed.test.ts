/**
 * 1,000 generated malformed order payloads: every one gets a 4xx problem document, none is a
 * 2xx or a 5xx, and no row is left behind in any schema.
 */
import fc from "fast-check";
import knexFactory, { type Knex } from "knex";
import { api, type ApiClient } from "../helpers/http";
import { startCluster, type Cluster } from "../helpers/cluster";
import { createApiWorld, partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";

let cluster: Cluster;
let partner: ApiClient;
let world: ApiWorld;
let db: Knex | undefined;
let admin: ApiClient;

beforeAll(async () => {
  cluster = await startCluster();
  admin = api(cluster.baseUrl).as(cluster.adminKey);
  world = await createApiWorld(admin);
  partner = admin.as(world.partnerKey);
  if (cluster.distributed)
    db = knexFactory({ client: "pg", connection: cluster.databaseUrl, pool: { min: 0, max: 1 } });
}, 180_000);
afterAll(async () => {
  await db?.destroy();
  await cluster?.stop();
});

type Body = Record<string, unknown>;

/** Values that are wrong for any field of an order: each one breaks the field it lands in. */
const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.constant(""),
  fc.string({ minLength: 301, maxLength: 400 }),
  fc.double({ noNaN: true }).filter((n) => n <= 0),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.integer(), { minKeys: 1, maxKeys: 2 }),
);

/** One change that makes a valid order invalid. */
const breakOrder: fc.Arbitrary<(b: Body) => Body> = fc.oneof(
  fc.constantFrom("contact", "invoicingAddress", "deliveryAddress", "items").map((k) => (b: Body) => {
    const { [k]: _dropped, ...rest } = b;
    return rest;
  }),
  fc
    .tuple(fc.constantFrom("contact", "invoicingAddress", "deliveryAddress", "items", "externalId", "customer"), junk)
    // contact must stay a non-object to be wrong; optional fields accept null (absent).
    .filter(([k, v]) => !(k === "contact" && typeof v === "object" && v !== null && !Array.isArray(v)))
    .filter(([k, v]) => !((k === "customer" || k === "externalId") && v === null))
    .map(([k, v]) => (b: Body) => ({ ...b, [k]: v })),
  fc
    .string({ minLength: 1, maxLength: 12 })
    .filter(
      (k) =>
        ![
          "externalId",
          "externalReference",
          "contact",
          "customer",
          "invoicingAddress",
          "deliveryAddress",
          "items",
        ].includes(k) && !k.startsWith("__"),
    )
    .map((k) => (b: Body) => ({ ...b, [k]: 1 })),
  fc.tuple(fc.constantFrom("recipient", "street", "zipCode", "city", "country"), junk).map(([k, v]) => (b: Body) => ({
    ...b,
    deliveryAddress: { ...(b.deliveryAddress as Body), [k]: v },
  })),
  fc
    .constantFrom("FRA", "f", "12", "")
    .map((country) => (b: Body) => ({ ...b, invoicingAddress: { ...(b.invoicingAddress as Body), country } })),
  fc
    .oneof(
      fc.double({ noNaN: true, max: 0 }),
      fc.constant(1.2345),
      fc.constant(1e12),
      fc.constant("3"),
      fc.constant(null),
    )
    .map((q) => (b: Body) => ({ ...b, items: [{ externalReferenceId: world.packagingRefs[0], orderedQuantity: q }] })),
  fc.constant((b: Body) => ({ ...b, items: [] })),
  fc.constant((b: Body) => ({ ...b, items: [{ orderedQuantity: 1 }] })),
  fc.constant((b: Body) => ({ ...b, items: [{ packaging: 1, externalReferenceId: "x", orderedQuantity: 1 }] })),
  fc.constant((b: Body) => ({ ...b, contact: {} })),
  fc.constant((b: Body) => ({ ...b, contact: { externalReferenceId: "x", internalReferenceId: "1" } })),
  fc.constant((b: Body) => ({ ...b, contact: { externalReference: "INLINE-ONLY" } })),
  fc
    .string({ minLength: 1, maxLength: 20 })
    .map((ref) => (b: Body) => ({ ...b, contact: { externalReferenceId: `missing-${ref}` } })),
  fc
    .string({ minLength: 1, maxLength: 20 })
    .map((ref) => (b: Body) => ({ ...b, items: [{ externalReferenceId: `missing-${ref}`, orderedQuantity: 1 }] })),
  fc.integer({ min: 1_000_000 }).map((id) => (b: Body) => ({ ...b, contact: { internalReferenceId: String(id) } })),
);

/** A malformed request: a valid order broken one to three ways, or a body that is no order at all. */
const malformedRequest: fc.Arbitrary<{ raw?: string; body?: unknown }> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .array(breakOrder, { minLength: 1, maxLength: 3 })
      .map((breaks) => ({ body: breaks.reduce((b, f) => f(b), partnerOrderBody(world) as Body) })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.anything().filter((v) => typeof v !== "object" || v === null || Array.isArray(v)),
        fc.array(fc.object()),
      )
      .map((body) => ({ body })),
  },
  {
    weight: 1,
    arbitrary: fc
      .string({ maxLength: 50 })
      .filter((s) => {
        try {
          JSON.parse(s);
          return false;
        } catch {
          return true;
        }
      })
      .map((raw) => ({ raw })),
  },
);

/** How many records a list holds, following its Link headers. */
async function countThrough(client: ApiClient, path: string): Promise<number> {
  let count = 0;
  for (let next: string | null = `${path}?limit=500`; next;) {
    const page: { body: unknown[]; headers: Record<string, string> } = await client.get<unknown[]>(next);
    count += page.body.length;
    next = page.headers.link ? /^<([^>]+)>/.exec(page.headers.link)![1] : null;
  }
  return count;
}

/**
 * Every table a bad order could have written to. On the embedded fallback the database lives
 * inside the service's process: the same is counted through the API (outbox and idempotency
 * rows, which no list shows, only come with an order anyway).
 */
async function rowCounts(): Promise<Record<string, number>> {
  if (!db) {
    return {
      orders: await countThrough(admin, "/api/v1/orders"),
      contactReferences: await countThrough(partner, "/api/v1/contact_references"),
      contacts: await countThrough(admin, "/api/v1/contacts"),
      customers: await countThrough(admin, "/api/v1/customers"),
    };
  }
  const tables = [
    "orders.orders",
    "orders.order_items",
    "orders.outbox",
    "orders.idempotency_keys",
    "references.contact_references",
    "crm.contacts",
    "crm.customers",
  ];
  const counts: Record<string, number> = {};
  for (const t of tables) counts[t] = Number((await db(t).count({ n: "*" }))[0].n);
  return counts;
}

it("when 1,000 malformed payloads are sent, then each is a 4xx problem document and nothing is written", async () => {
  const before = await rowCounts();
  const samples = fc.sample(malformedRequest, { numRuns: 1000, seed: 20261121 });
  const outcomes: { status: number; type: string; sample: unknown }[] = [];
  for (let i = 0; i < samples.length; i += 20) {
    outcomes.push(
      ...(await Promise.all(
        samples.slice(i, i + 20).map(async (s) => {
          const r =
            s.raw !== undefined
              ? await partner.request({
                  method: "POST",
                  path: "/api/v1/orders",
                  rawBody: s.raw,
                  headers: { "Content-Type": "application/json" },
                })
              : await partner.post<{ type?: string }>("/api/v1/orders", s.body);
          return {
            status: r.status,
            type: String((r.body as { type?: string }).type ?? r.headers["content-type"]),
            sample: s,
          };
        }),
      )),
    );
  }
  const wrong = outcomes.filter((o) => o.status < 400 || o.status >= 500 || !o.type.startsWith("/problems/"));
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(outcomes).toHaveLength(1000);
  expect(await rowCounts()).toEqual(before);
}, 300_000);
