import { contactModeOf, itemModesOf, scopesNeeded } from "../../services/orders/orders.identify";
import { codeDay, orderCode } from "../../services/orders/orders.code";
import { requestHash } from "../../shared/http/idempotency";

const pathsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    return (err as { data: { errors: { path: string }[] } }).data.errors.map((e) => e.path);
  }
  throw new Error("expected an error");
};

describe("identifying the contact of an order", () => {
  it("when contact.id is given, then the CRM mode is chosen", () => {
    expect(contactModeOf({ contact: { id: 7 } })).toEqual({ kind: "crm", id: 7 });
  });

  it("when a partner reference is given, then the reference mode carries its field path", () => {
    expect(contactModeOf({ contact: { externalReferenceId: "C-1" } })).toEqual({
      kind: "reference",
      ref: { by: "external", value: "C-1", path: "contact.externalReferenceId" },
    });
    expect(contactModeOf({ contact: { internalReferenceId: "12" } })).toMatchObject({
      ref: { by: "internal", path: "contact.internalReferenceId" },
    });
  });

  it("when the contact data is sent with the order, then the inline mode needs every field and the customer", () => {
    expect(pathsOf(() => contactModeOf({ contact: { externalReference: "P-1", firstName: "A" } }))).toEqual([
      "contact.lastName",
      "contact.email",
      "customer.name",
    ]);
    expect(
      contactModeOf({
        contact: { externalReference: "P-1", firstName: "A", lastName: "B", email: "a@b.test" },
        customer: { name: "Acme" },
      }),
    ).toMatchObject({ kind: "inline", customer: { name: "Acme" } });
  });

  it("when no mode or two modes are used, then the error names contact", () => {
    expect(pathsOf(() => contactModeOf({ contact: {} }))).toEqual(["contact"]);
    expect(pathsOf(() => contactModeOf({ contact: { id: 1, externalReferenceId: "x" } }))).toEqual(["contact"]);
    expect(pathsOf(() => contactModeOf({ contact: { externalReferenceId: "x", internalReferenceId: "1" } }))).toEqual([
      "contact",
    ]);
  });

  it("when inline fields come with another mode, then each stray field is named", () => {
    expect(pathsOf(() => contactModeOf({ contact: { id: 1, firstName: "A", email: "a@b.test" } }))).toEqual([
      "contact.firstName",
      "contact.email",
    ]);
  });
});

describe("identifying the packaging of each item", () => {
  it("when items mix catalogue ids and references, then each gets its mode", () => {
    expect(
      itemModesOf([
        { packaging: 3, orderedQuantity: 1 },
        { externalReferenceId: "REF", orderedQuantity: 2 },
        { internalReferenceId: "9", orderedQuantity: 3 },
      ]),
    ).toEqual([
      { kind: "catalogue", packagingId: 3 },
      { kind: "reference", ref: { by: "external", value: "REF", path: "items[1].externalReferenceId" } },
      { kind: "reference", ref: { by: "internal", value: "9", path: "items[2].internalReferenceId" } },
    ]);
  });

  it("when several items use no mode or two, then every one of them is named at once", () => {
    expect(
      pathsOf(() =>
        itemModesOf([
          { orderedQuantity: 1 },
          { packaging: 1, orderedQuantity: 1 },
          { packaging: 1, externalReferenceId: "x", orderedQuantity: 1 },
        ]),
      ),
    ).toEqual(["items[0]", "items[2]"]);
  });

  it("when modes are mixed, then the scopes needed are named with the first field needing each", () => {
    const needed = scopesNeeded(
      { kind: "crm", id: 1 },
      itemModesOf([
        { packaging: 1, orderedQuantity: 1 },
        { externalReferenceId: "r", orderedQuantity: 1 },
      ]),
    );
    expect(Object.fromEntries(needed)).toEqual({
      crm: "contact.id",
      catalogue: "items[0].packaging",
      partner: "items[1].externalReferenceId",
    });
  });
});

describe("order codes and idempotency hashes", () => {
  it("when formatted, then a code reads ORD-<YYYYMMDD>-<6-digit sequence>", () => {
    expect(orderCode(codeDay(new Date("2026-11-21T23:59:59Z")), 42)).toBe("ORD-20261121-000042");
    expect(orderCode("20261122", 1234567)).toBe("ORD-20261122-1234567");
  });

  it("when two bodies differ only in key order, then their hashes are equal; otherwise not", () => {
    expect(requestHash({ a: 1, b: { c: [1, 2], d: "x" } })).toBe(requestHash({ b: { d: "x", c: [1, 2] }, a: 1 }));
    expect(requestHash({ a: 1, b: [1, 2] })).not.toBe(requestHash({ a: 1, b: [2, 1] }));
  });
});
