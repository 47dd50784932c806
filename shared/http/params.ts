/**
 * The one grammar of ids and parameters that every service's `<name>.params.ts` builds on.
 *
 * - An id is plain decimal digits, no sign, no leading zero, no spaces, no exponent, no other
 *   script's digits, within its column's range: 1 … 2,147,483,647 for `integer` (serial)
 *   columns, 1 … 2^53−1 for the `bigint` ones (webhook deliveries; ids above 2^53−1 cannot be
 *   represented exactly in JSON numbers, and the sequence will not reach them). In a path, an id
 *   outside this grammar names nothing: 404. In a JSON body an id is a JSON integer in range
 *   (`1.0` and `1e0` are the same JSON number as `1`, so they are the same id); a string is 422.
 * - An id named in a string (a partner's `internalReferenceId: "12"`) is the same canonical
 *   digits, never trimmed or otherwise read into one: `" 12"`, `"012"` name nothing.
 * - An identifier given as a string (an external id, a code, a reference) is compared as sent:
 *   whitespace at either end is refused (422 naming the field), never trimmed away, so one
 *   identifier has one spelling. Names and addresses, which are not compared, are trimmed.
 * - An optional field is one that may be left out: `null` is refused (422), unlike
 *   fastest-validator's own `optional`, which lets `null` through.
 *
 * Rules whose check is code (`custom`) carry `jsonSchema`: what they accept, in the terms of the
 * OpenAPI document (gateway/openapi/fastest-to-json-schema.ts reads it). Rules whose check
 * spans several fields carry `jsonSchemaAlso`, merged into the converted schema. Property tests
 * hold the two sides to each other (test/unit/params.test.ts, test/unit/openapi-agreement.test.ts).
 */
import { NotFoundError } from "../errors";
import type { RuleOf, Typed } from "../schema-types";

/** Largest id of an `integer` (serial) column. */
export const INT_ID_MAX = 2_147_483_647;
/** Largest id of a `bigint` column that JSON numbers and JavaScript carry exactly. */
export const BIGINT_ID_MAX = Number.MAX_SAFE_INTEGER;

const ID_DIGITS = /^[1-9][0-9]{0,15}$/;

type Errors = { type: string; actual: unknown; message?: string }[];
type Custom = (value: unknown, errors: Errors, ...rest: unknown[]) => unknown;
/** A fastest-validator rule object, as the params files write them. */
export type Rule = Record<string, unknown>;

/** The id a text names, or null when it is not one (the grammar above). */
export function parseId(text: string, max = INT_ID_MAX): number | null {
  if (!ID_DIGITS.test(text)) return null;
  const id = Number(text);
  return id <= max ? id : null;
}

/** Whether a number is an id of a column whose largest id is `max`. */
export function isId(value: unknown, max = INT_ID_MAX): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1 && value <= max;
}

function idSchema(max: number): Rule {
  return {
    type: "integer",
    format: max <= INT_ID_MAX ? "int32" : "int64",
    minimum: 1,
    maximum: max,
    description: `Decimal digits only (no sign, leading zero, space or exponent), 1 to ${max}.`,
  };
}

/**
 * An id in the URL path (`/orders/{id}`). Other services may pass it as a number. Anything else
 * is 404: a URL that is no id names no resource.
 */
export function pathId(entity: string, max = INT_ID_MAX): Rule & Typed<number> {
  const check: Custom = (value) => {
    const id = typeof value === "string" ? parseId(value, max) : isId(value, max) ? value : null;
    if (id === null) throw new NotFoundError(entity, String(value));
    return id;
  };
  return { type: "any", custom: check, jsonSchema: idSchema(max) };
}

/** An id in a JSON body: a JSON integer in range, never a string. */
export function bodyId(max = INT_ID_MAX): Rule & Typed<number> {
  return { type: "number", integer: true, min: 1, max, convert: false };
}

/** The ids an internal action takes in one call (at most `maxItems`). */
export function idList(maxItems: number, max = INT_ID_MAX): Rule & Typed<number[]> {
  return arrayOf(bodyId(max), { max: maxItems });
}

/**
 * The canonical decimal spellings of 1 … max as one regular expression (the JSON Schema of an id
 * in a string must say its range, and a pattern is all JSON Schema has for strings): the shorter
 * lengths whole, then at max's length each prefix of max followed by a smaller digit, and max.
 */
export function idDigitsPattern(max = INT_ID_MAX): string {
  const digits = String(max);
  const branches: string[] = [];
  if (digits.length > 1) branches.push(digits.length === 2 ? "[1-9]" : `[1-9][0-9]{0,${digits.length - 2}}`);
  for (let i = 0; i < digits.length; i++) {
    const low = i === 0 ? 1 : 0;
    const below = Number(digits[i]) - 1;
    if (below < low) continue;
    const rest = digits.length - 1 - i;
    const range = below === low ? String(low) : `[${low}-${below}]`;
    branches.push(`${digits.slice(0, i)}${range}${rest === 0 ? "" : rest === 1 ? "[0-9]" : `[0-9]{${rest}}`}`);
  }
  branches.push(digits);
  return `^(?:${branches.join("|")})$`;
}

/**
 * No whitespace at either end (`\s` is the set String.prototype.trim removes). The empty string
 * matches: `min` refuses it, so that each wrong value gets one error naming its field, not two.
 */
const IDENTIFIER_PATTERN = /^(?:\S(?:[\s\S]*\S)?)?$/;
const IDENTIFIER_MESSAGE = "The '{field}' field must not begin or end with whitespace.";

/**
 * A string that identifies something (an `externalId`, a product `code`, a partner's
 * `externalReference`): 1 … max characters, compared as sent. Whitespace at either end is 422
 * naming the field: trimmed, `" A-1"` would silently be taken for `"A-1"`.
 */
export function identifier<const Max extends number>(max: Max) {
  return {
    type: "string",
    min: 1,
    max,
    pattern: IDENTIFIER_PATTERN,
    messages: { stringPattern: IDENTIFIER_MESSAGE },
  } as const;
}

/**
 * How a body names a partner's reference record: its id, as a JSON integer or a string of its
 * canonical digits, or, where `codes` are accepted, the partner's own code (an identifier). The
 * value handed on is a string: the id's digits, or the code as sent. Anything else — a string
 * with whitespace at either end, `"012"` where only ids are accepted, `true`, `1.5`, an object —
 * is 422 naming the field. A new rule object for each field: fastest-validator compiles a rule
 * object it meets a second time by reference to the first, and then never runs that field's
 * `custom`.
 */
export function referenceTo({ codes, maxLength }: { codes: boolean; maxLength: number }): Rule & Typed<string> {
  const message = codes
    ? `The '{field}' field must be a reference code (1 to ${maxLength} characters, no whitespace at either end) or a reference id (a whole number).`
    : `The '{field}' field must be a reference id: a whole number from 1 to ${INT_ID_MAX}, as a JSON integer or its decimal digits.`;
  const check: Custom = (value, errors) => {
    if (isId(value)) return String(value);
    if (typeof value === "string") {
      if (parseId(value) !== null) return value;
      if (codes && value.length <= maxLength && IDENTIFIER_PATTERN.test(value)) return value;
    }
    errors.push({ type: "referenceTo", actual: value, message });
    return value;
  };
  const id = { type: "integer", format: "int32", minimum: 1, maximum: INT_ID_MAX, description: "The reference's id." };
  const text = codes
    ? {
        type: "string",
        minLength: 1,
        maxLength,
        pattern: IDENTIFIER_PATTERN.source,
        description: "The partner's own code of the reference, or the reference's id in decimal digits.",
      }
    : {
        type: "string",
        maxLength: String(INT_ID_MAX).length,
        pattern: idDigitsPattern(),
        description: "The reference's id in decimal digits.",
      };
  return { type: "any", custom: check, jsonSchema: { anyOf: [text, id] } };
}

/**
 * A whole number in the query string (`?limit=`): decimal digits within `min` … `max`, or a
 * number when another service calls.
 */
export function queryInteger(min: number, max: number): Rule & Typed<number> {
  const check: Custom = (value, errors) => {
    const n = typeof value === "string" && /^[1-9][0-9]{0,15}$/.test(value) ? Number(value) : value;
    if (typeof n === "number" && Number.isSafeInteger(n) && n >= min && n <= max) return n;
    errors.push({
      type: "queryInteger",
      actual: value,
      message: `The '{field}' field must be a whole number from ${min} to ${max}, in decimal digits.`,
    });
    return value;
  };
  return { type: "any", custom: check, jsonSchema: { type: "integer", format: "int32", minimum: min, maximum: max } };
}

const refuseNull: Custom = (value, errors) => {
  if (value === null)
    errors.push({
      type: "optionalNotNull",
      actual: value,
      message: "The '{field}' field may be left out, but not null.",
    });
  return value;
};

/** The rule of a field that may be left out, but is never `null`. */
export function optional<const R extends Rule>(rule: R): R & { optional: true } {
  const inner = rule.custom as Custom | undefined;
  const custom: Custom = (value, errors, ...rest) => {
    if (value === null) return refuseNull(value, errors);
    if (value === undefined || !inner) return value;
    return inner(value, errors, ...rest);
  };
  return { ...rule, optional: true, custom };
}

const elementsPresent: Custom = (value, errors, _schema, path) => {
  const elements: unknown = value;
  if (!Array.isArray(elements)) return value;
  elements.forEach((element: unknown, i) => {
    if (element === null || element === undefined) {
      errors.push({
        type: "arrayElementMissing",
        actual: element,
        field: `${String(path)}[${i}]`,
        message: "The '{field}' field cannot be null.",
      } as Errors[number]);
    }
  });
  return value;
};

/**
 * An array whose elements follow `items`, where a `null` element is refused naming it
 * (`items[0]`). fastest-validator checks an element's presence in the array's own scope, before
 * it knows the index, and so names the array; here the element rule lets a missing element
 * through and the array's check names each one. The path is the array's place in the params
 * (right for an array that is not itself an element of another array).
 */
export function arrayOf<const Item extends Rule>(items: Item, limits: Rule = {}): Rule & Typed<RuleOf<Item>[]> {
  return { type: "array", ...limits, items: { ...items, optional: true }, custom: elementsPresent };
}

/**
 * The JSON Schema of "exactly one of these ways to name a record": each mode lists the fields it
 * needs; a mode's fields exclude the fields that start every other mode.
 */
export function exactlyOneMode(modes: { requires: string[] }[]): Rule {
  return {
    oneOf: modes.map((mode, i) => {
      const others = modes.flatMap((m, j) => (j === i ? [] : m.requires.filter((f) => !mode.requires.includes(f))));
      const unique = [...new Set(others)];
      return {
        required: mode.requires,
        ...(unique.length > 0 ? { not: { anyOf: unique.map((f) => ({ required: [f] })) } } : {}),
      };
    }),
  };
}
