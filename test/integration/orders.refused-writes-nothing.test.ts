/**
 * A refused request writes nothing, anywhere: an order that carries its contact inline and is
 * then refused (duplicate externalId, unknown / inactive / another partner's packaging
 * reference, a missing scope, a reused Idempotency-Key) and a refused POST /contact_references
 * leave the row count of every table of every schema as it was, and B's own reference
 * unchanged. Concurrent orders with one externalId: only the winner's rows remain.
 */
import fc from "fast-check";
import {
  partnerOrder,
  protectedViews,
  refusal,
  rowCounts,
  startCrmTenants,
  type ContactReferenceJson,
  type CrmTenants,
} from "../helpers/crm-tenants";

let w: CrmTenants;
const IDEMPOTENCY_KEY = "K-REFUSED-1";

beforeAll(async () => {
  w = await startCrmTenants();
  await w.t.call("orders.create", partnerOrder(w, { externalReference: "first body" }), w.partnerB, {
    idempotencyKey: IDEMPOTENCY_KEY,
  });
});
afterAll(() => w.t.stop());

let fresh = 0;
const word = fc.stringMatching(/^[A-Za-z]{1,12}$/);

/** Inline contact data: codes, e-mails and customer names new, B's own, or A's and the admin's. */
function inlineContactOf(w: CrmTenants) {
  return fc
    .record({
      externalReference: fc.constantFrom("NEW", "B-CONTACT", "A-CONTACT"),
      email: fc.constantFrom("NEW", "bob@beta.test", w.a.email, w.admin.email),
      customer: fc.constantFrom("NEW", "Beta Stores", w.a.customerName, w.admin.customerName),
      firstName: word,
      lastName: word,
    })
    .map((d) => {
      const n = ++fresh;
      return {
        contact: {
          externalReference: d.externalReference === "NEW" ? `R-GEN-${n}` : d.externalReference,
          firstName: d.firstName,
          lastName: d.lastName,
          email: d.email === "NEW" ? `refused-${n}@beta.test` : d.email,
        },
        customer: { name: d.customer === "NEW" ? `Refused ${n}` : d.customer },
      };
    });
}

type Inline = ReturnType<typeof inlineContactOf> extends fc.Arbitrary<infer I> ? I : never;

interface Refused {
  call(inline: Inline): Promise<unknown>;
  status: number;
}

const order = (inline: Inline, extra: Record<string, unknown>, meta = {}) =>
  w.t.call("orders.create", partnerOrder(w, { ...inline, ...extra }), w.partnerB, meta);
const items = (...lines: Record<string, unknown>[]) => ({
  items: [{ externalReferenceId: w.b.packagingRefs[0], orderedQuantity: 1 }, ...lines],
});

/** Each way an order with an inline contact, or a contact reference, is refused. */
function refusalsOf(w: CrmTenants): Record<string, Refused> {
  return {
    "duplicate externalId": { status: 409, call: (i) => order(i, { externalId: w.b.orderExternalId }) },
    "unknown packaging reference": {
      status: 422,
      call: (i) => order(i, items({ externalReferenceId: "NO-SUCH-REF", orderedQuantity: 1 })),
    },
    "inactive packaging reference": {
      status: 422,
      call: (i) => order(i, items({ externalReferenceId: w.b.inactivePackagingRef, orderedQuantity: 2 })),
    },
    "another partner's packaging reference": {
      status: 422,
      call: (i) => order(i, items({ externalReferenceId: w.otherPartnersPackagingRef, orderedQuantity: 1 })),
    },
    "a catalogue packaging without the scope": {
      status: 403,
      call: (i) => order(i, items({ packaging: w.packagingId, orderedQuantity: 1 })),
    },
    "an Idempotency-Key reused with another body": {
      status: 422,
      call: (i) => order(i, {}, { idempotencyKey: IDEMPOTENCY_KEY }),
    },
    "a contact reference with an invalid e-mail": {
      status: 422,
      call: (i) =>
        w.t.call(
          "references.createContactReference",
          { ...i, contact: { ...i.contact, email: "not-an-address" } },
          w.partnerB,
        ),
    },
    "a contact reference with an unknown field": {
      status: 422,
      call: (i) =>
        w.t.call(
          "references.createContactReference",
          { ...i, customer: { ...i.customer, vatNumber: "FR1" } },
          w.partnerB,
        ),
    },
    "a contact reference without its customer": {
      status: 422,
      call: (i) => w.t.call("references.createContactReference", { contact: i.contact }, w.partnerB),
    },
  };
}

const bReference = () =>
  w.t.call<ContactReferenceJson>("references.getContactReference", { id: String(w.b.reference.id) }, w.partnerB);

describe("when a request with contact data is refused", () => {
  it("then no table of any schema gains or loses a row, and no record changes", async () => {
    const refusals = refusalsOf(w);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(refusals)), inlineContactOf(w), async (kind, inline) => {
        const before = { rows: await rowCounts(w.db), views: await protectedViews(w), own: await bReference() };
        expect((await refusal(refusals[kind].call(inline))).status).toBe(refusals[kind].status);
        expect({ rows: await rowCounts(w.db), views: await protectedViews(w), own: await bReference() }).toEqual(
          before,
        );
      }),
      { numRuns: 60 },
    );
  });
});

describe("when several orders with one externalId and different inline contacts race", () => {
  it("then one is taken, the others are 409, and only the winner's contact, reference and event remain", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.array(word, { minLength: 4, maxLength: 4 }),
        async (racers, names) => {
          const externalId = `RACE-${++fresh}`;
          const bodies = names.slice(0, racers).map((name, i) => ({
            contact: {
              externalReference: `${externalId}-C${i}`,
              firstName: name,
              lastName: name,
              email: `${externalId.toLowerCase()}-${i}@race.test`,
            },
            customer: { name: `${externalId} customer ${i}` },
          }));
          const before = await rowCounts(w.db);
          const outcomes = await Promise.allSettled(bodies.map((b) => order(b, { externalId })));
          const taken = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [i] : []));
          expect(taken).toHaveLength(1);
          expect(
            outcomes.filter((o) => o.status === "rejected").map((o) => (o.reason as { code: number }).code),
          ).toEqual(Array(racers - 1).fill(409));

          const after = await rowCounts(w.db);
          const grew = Object.fromEntries(
            Object.keys(after).flatMap((t) => (after[t] !== before[t] ? [[t, after[t] - before[t]]] : [])),
          );
          expect(grew).toEqual({
            "crm.customers": 1,
            "crm.contacts": 1,
            "references.contact_references": 1,
            "references.outbox": 1,
            "orders.orders": 1,
            "orders.order_items": 2,
            "orders.outbox": 1,
          });
          const bRefs = await w.t.call<{ items: ContactReferenceJson[] }>(
            "references.listContactReferences",
            { limit: "500" },
            w.partnerB,
          );
          const raced = bRefs.items.map((r) => r.externalReference).filter((code) => code.startsWith(`${externalId}-`));
          expect(raced).toEqual([bodies[taken[0]].contact.externalReference]);
        },
      ),
      { numRuns: 8 },
    );
  });
});
