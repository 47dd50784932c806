/**
 * One id grammar in strings too (issue 20): an id named in a string is its canonical digits, and
 * an identifier with whitespace at either end is refused naming the field, never trimmed into
 * another one — with generated spellings, through fastest-validator compiled as the broker
 * compiles it, on the rules (shared/http/params.ts) and on the orders body that uses them.
 */
import fc from "fast-check";
import Validator from "fastest-validator";
import { BIGINT_ID_MAX, INT_ID_MAX, identifier, idDigitsPattern, parseId, referenceTo } from "../../shared/http/params";
import { createOrderParams } from "../../services/orders/orders.params";
import { createProductParams } from "../../services/catalogue/catalogue.params";
import { createPackagingReferenceParams } from "../../services/references/references.params";
import { ADDRESS } from "../helpers/fixtures";
import { canonical, notAnId, paddedId, whitespace } from "../helpers/id-spellings";

const validator = new Validator({ useNewCustomCheckerFunction: true });
type Check = (value: object) => true | { field: string }[];
const compile = (schema: object) => validator.compile({ $$strict: true, ...schema }) as Check;

const fieldsOf = (result: true | { field: string }[]) =>
  result === true ? [] : [...new Set(result.map((e) => e.field))];

/** A text that is not blank at either end, of 1 … max characters. */
const trimmedText = (max: number) =>
  fc.string({ unit: "grapheme", minLength: 1, maxLength: max }).filter((s) => s.length <= max && s.trim() === s);
/** The same with whitespace added before, after or both. */
const padded = (max: number) =>
  fc
    .tuple(trimmedText(max - 2), fc.array(whitespace, { maxLength: 1 }), fc.array(whitespace, { maxLength: 1 }))
    .filter(([, before, after]) => before.length + after.length > 0)
    .map(([text, before, after]) => `${before.join("")}${text}${after.join("")}`);

describe("ids written as digits", () => {
  it("when the pattern of ids up to a bound is tested on any number's digits, then it matches exactly the ids in range", () => {
    for (const max of [INT_ID_MAX, BIGINT_ID_MAX, 9, 10, 500, 1000, 99_999, 100_000, 2_000_000_001]) {
      const pattern = new RegExp(idDigitsPattern(max));
      fc.assert(
        fc.property(fc.integer({ min: 1, max: Math.min(max * 11, Number.MAX_SAFE_INTEGER) }), (n) => {
          expect({ max, n, matches: pattern.test(String(n)) }).toEqual({ max, n, matches: n <= max });
        }),
      );
      expect(pattern.test(String(max))).toBe(true);
    }
  });

  it("when the pattern is tested on any other spelling, then it agrees with parseId: no sign, zero, space or script of its own", () => {
    const pattern = new RegExp(idDigitsPattern());
    fc.assert(fc.property(fc.oneof(notAnId, paddedId), (text) => pattern.test(text) === (parseId(text) !== null)));
  });
});

describe("a reference named by its id only (internalReferenceId)", () => {
  const check = compile({ ref: referenceTo({ codes: false, maxLength: 100 }) });

  it("when it is a JSON integer id or the id's canonical digits, then it passes on as those digits", () => {
    fc.assert(
      fc.property(fc.oneof(canonical(INT_ID_MAX), fc.integer({ min: 1, max: INT_ID_MAX })), (given) => {
        const params: { ref: unknown } = { ref: given };
        return check(params) === true && params.ref === String(given);
      }),
    );
  });

  it("when it is any other spelling of an id — spaces around it, a sign, a leading zero, other digits — then it is 422 naming it", () => {
    fc.assert(fc.property(fc.oneof(notAnId, paddedId), (ref) => fieldsOf(check({ ref })).join() === "ref"));
  });
});

describe("a reference named by its id or the partner's code (externalReferenceId)", () => {
  const check = compile({ ref: referenceTo({ codes: true, maxLength: 100 }) });

  it("when it is a code with no whitespace at either end, or an id, then it passes on as sent (an id as its digits)", () => {
    fc.assert(
      fc.property(fc.oneof(trimmedText(100), canonical(INT_ID_MAX)), (ref) => {
        const params = { ref };
        return check(params) === true && params.ref === ref;
      }),
    );
  });

  it("when an id or a code has whitespace at either end, then it is 422 naming it, never taken for the trimmed one", () => {
    fc.assert(fc.property(fc.oneof(paddedId, padded(100)), (ref) => fieldsOf(check({ ref })).join() === "ref"));
  });
});

describe("identifiers", () => {
  const check = compile({ code: identifier(100) });

  it("when an identifier has no whitespace at either end, then it passes unchanged", () => {
    fc.assert(
      fc.property(trimmedText(100), (code) => {
        const params = { code };
        return check(params) === true && params.code === code;
      }),
    );
  });

  it("when it has whitespace at either end, then it is 422 naming it, with a message that says so", () => {
    fc.assert(fc.property(padded(100), (code) => fieldsOf(check({ code })).join() === "code"));
    expect(check({ code: " OIL" })).toEqual([
      expect.objectContaining({ field: "code", message: "The 'code' field must not begin or end with whitespace." }),
    ]);
  });
});

describe("the identifiers of the bodies", () => {
  const order = compile(createOrderParams);
  const base = {
    contact: { internalReferenceId: "11" },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: [{ internalReferenceId: "11", orderedQuantity: 1 }],
  };

  it('when an order names references by ids written with spaces (issue 20: " 11", "11 "), then it is 422 naming each field', () => {
    expect(order(structuredClone(base))).toBe(true);
    fc.assert(
      fc.property(paddedId, paddedId, fc.constantFrom("internalReferenceId", "externalReferenceId"), (a, b, field) => {
        const result = order({ ...base, contact: { [field]: a }, items: [{ [field]: b, orderedQuantity: 1 }] });
        expect(fieldsOf(result).sort()).toEqual([`contact.${field}`, `items[0].${field}`]);
      }),
    );
  });

  it("when an order's externalId, externalReference or inline contact reference has whitespace at either end, then it is 422 naming it", () => {
    const inline = { externalReference: "CUST-9", firstName: "Grace", lastName: "Hopper", email: "g@navy.test" };
    fc.assert(
      fc.property(padded(100), (text) => {
        const result = order({
          ...base,
          externalId: text,
          externalReference: text,
          contact: { ...inline, externalReference: text },
          customer: { name: "Navy" },
        });
        expect(fieldsOf(result).sort()).toEqual(["contact.externalReference", "externalId", "externalReference"]);
      }),
    );
  });

  it("when a product code or a packaging reference's code has whitespace at either end, then it is 422 naming it", () => {
    const product = compile(createProductParams);
    const packagingReference = compile(createPackagingReferenceParams);
    fc.assert(
      fc.property(padded(100), (text) => {
        expect(fieldsOf(product({ code: text, label: "Olive oil" }))).toEqual(["code"]);
        expect(fieldsOf(packagingReference({ clientId: 1, externalReference: text, packagingId: 1 }))).toEqual([
          "externalReference",
        ]);
      }),
    );
  });
});
