/**
 * The id and parameter grammar (shared/http/params.ts, shared/http/paging.ts), with generated inputs,
 * through fastest-validator compiled as the broker compiles it.
 */
import fc from "fast-check";
import Validator from "fastest-validator";
import { decodeCursor, encodeCursor, pageParams, toSizeBoundedPage } from "../../shared/http/paging";
import { BIGINT_ID_MAX, INT_ID_MAX, bodyId, optional, parseId, pathId } from "../../shared/http/params";
import { canonical, notAnId } from "../helpers/id-spellings";

const validator = new Validator({ useNewCustomCheckerFunction: true });
const compile = (schema: object) =>
  validator.compile({ $$strict: true, ...schema }) as (value: object) => true | { field: string }[];

describe("ids", () => {
  it("when a text is the canonical decimal of an id in range, then it parses to that id", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: INT_ID_MAX }), (n) => parseId(String(n)) === n));
    fc.assert(fc.property(fc.integer({ min: 1, max: BIGINT_ID_MAX }), (n) => parseId(String(n), BIGINT_ID_MAX) === n));
  });

  it("when a text is any other spelling, sign, script or out of range, then it is no id", () => {
    fc.assert(fc.property(notAnId, (text) => parseId(text) === null));
  });

  it("when an id is in the path, then valid ones become numbers and anything else is 404 naming the text", () => {
    const check = compile({ id: pathId("order") });
    fc.assert(
      fc.property(canonical(INT_ID_MAX), (text) => {
        const params: { id: unknown } = { id: text };
        return check(params) === true && params.id === Number(text);
      }),
    );
    fc.assert(
      fc.property(notAnId, (text) => {
        expect(() => check({ id: text })).toThrow(expect.objectContaining({ code: 404, type: "NOT_FOUND" }));
      }),
    );
  });

  it("when an id is in a JSON body, then only a JSON integer in range is accepted, and a string is refused naming it", () => {
    const check = compile({ customerId: bodyId() });
    fc.assert(fc.property(fc.integer({ min: 1, max: INT_ID_MAX }), (n) => check({ customerId: n }) === true));
    const refused = fc.oneof(
      fc.integer({ min: INT_ID_MAX + 1, max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: -1e9, max: 0 }),
      fc.double({ noInteger: true }),
      canonical(INT_ID_MAX),
      fc.constant(null),
      fc.boolean(),
    );
    fc.assert(
      fc.property(refused, (value) => {
        const result = check({ customerId: value });
        return result !== true && result.every((e) => e.field === "customerId");
      }),
    );
  });
});

describe("optional fields", () => {
  it("when an optional field is left out it passes; when it is null it is refused naming it; other values are checked as before", () => {
    const check = compile({ label: optional({ type: "string", min: 1, max: 5 }) });
    expect(check({})).toBe(true);
    const result = check({ label: null });
    expect(result).not.toBe(true);
    expect((result as { field: string }[]).map((e) => e.field)).toEqual(["label"]);
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 5 }), (s) => check({ label: s }) === true));
    fc.assert(fc.property(fc.string({ minLength: 6 }), (s) => check({ label: s }) !== true));
  });

  it("when an optional field has its own custom check, then the check still runs on given values", () => {
    const even = (v: unknown, errors: { type: string; actual: unknown }[]) => {
      if (typeof v === "number" && v % 2 !== 0) errors.push({ type: "even", actual: v });
      return v;
    };
    const check = compile({ n: optional({ type: "number", custom: even }) });
    fc.assert(fc.property(fc.integer(), (n) => (check({ n }) === true) === (n % 2 === 0)));
  });
});

describe("paging parameters", () => {
  const check = compile(pageParams);

  it("when limit is a decimal whole number from 1 to 500, then it passes as a number; any other text is refused naming limit", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), (n) => {
        const params: { limit?: unknown } = { limit: String(n) };
        return check(params) === true && params.limit === n;
      }),
    );
    const bad = fc.oneof(
      fc.constantFrom("0", "501", "0x10", " 5", "5 ", "1e2", "+5", "05", "-5", "5.0", "", "５"),
      fc.string().filter((s) => !/^[1-9][0-9]*$/.test(s) || Number(s) > 500),
      fc.array(fc.constant("5"), { minLength: 2, maxLength: 3 }),
    );
    fc.assert(
      fc.property(bad, (limit) => {
        const result = check({ limit });
        return result !== true && result.every((e) => e.field === "limit");
      }),
    );
  });

  it("when a cursor is one the API made, then it decodes to its id; anything else is refused naming cursor", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: INT_ID_MAX }),
        (n) => decodeCursor(encodeCursor(n)) === n && check({ cursor: encodeCursor(n) }) === true,
      ),
    );
    const forged = fc
      .oneof(
        fc.string({ minLength: 1, maxLength: 100 }),
        fc
          .constantFrom("id:1", "0", "-1", "1e3", "0x10", " 1", "01")
          .map((s) => Buffer.from(`id:${s}`).toString("base64url")),
        fc.integer({ min: 1, max: INT_ID_MAX }).map((n) => `${encodeCursor(n)}==`),
      )
      .filter((s) => !/^aWQ6[A-Za-z0-9_-]*$/.test(s) || decodeOrNull(s) === null);
    fc.assert(
      fc.property(forged, (cursor) => {
        const result = check({ cursor });
        expect(() => decodeCursor(cursor)).toThrow(expect.objectContaining({ code: 422 }));
        return result !== true && result.every((e) => e.field === "cursor");
      }),
    );
  });

  it("when a cursor's id is beyond the listed column's range, then it is refused", () => {
    fc.assert(
      fc.property(fc.integer({ min: INT_ID_MAX + 1, max: BIGINT_ID_MAX }), (n) => {
        expect(() => decodeCursor(encodeCursor(n))).toThrow(expect.objectContaining({ code: 422 }));
        return decodeCursor(encodeCursor(n), BIGINT_ID_MAX) === n;
      }),
    );
  });
});

function decodeOrNull(cursor: string): number | null {
  try {
    return decodeCursor(cursor);
  } catch {
    return null;
  }
}

describe("pages bounded by size", () => {
  const items = fc
    .array(fc.record({ id: fc.integer({ min: 1, max: 1_000_000 }), body: fc.string({ maxLength: 3000 }) }), {
      maxLength: 60,
    })
    .map((list) => list.map((item, i) => ({ ...item, id: i + 1 })));

  it("when items are large, then the page keeps them in order while under the budget, at least one, and the cursor resumes after the last kept", () => {
    fc.assert(
      fc.property(
        items,
        fc.integer({ min: 100, max: 50_000 }),
        fc.option(fc.constant("next"), { nil: null }),
        (list, budget, nextCursor) => {
          const page = toSizeBoundedPage(list, nextCursor, (i) => i.id, budget);
          expect(page.items).toEqual(list.slice(0, page.items.length));
          if (list.length > 0) expect(page.items.length).toBeGreaterThanOrEqual(1);
          if (page.items.length > 1) expect(Buffer.byteLength(JSON.stringify(page.items))).toBeLessThanOrEqual(budget);
          if (page.items.length < list.length) {
            expect(page.nextCursor).toBe(encodeCursor(page.items[page.items.length - 1].id));
            expect(Buffer.byteLength(JSON.stringify(list.slice(0, page.items.length + 1)))).toBeGreaterThan(budget);
          } else {
            expect(page.nextCursor).toBe(nextCursor);
          }
        },
      ),
    );
  });
});
