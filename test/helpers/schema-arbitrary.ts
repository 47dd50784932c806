/**
 * JSON Schema (the subset the OpenAPI document uses) → a fast-check arbitrary of values the
 * schema accepts. A keyword it does not understand throws, so a document that grows a new
 * construct fails loudly instead of being fuzzed with values it never describes.
 *
 *   const order = valuesOf(document, at(document, "/paths/~1api~1v1~1orders/post/requestBody/content/application~1json/schema"));
 */
import fc from "fast-check";
import { at, type Document } from "./openapi-schemas";

type Schema = Record<string, unknown>;

/** Keywords that only describe: they never constrain a value. */
const ANNOTATIONS = new Set([
  "description",
  "title",
  "examples",
  "example",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$comment",
  "discriminator",
  "externalDocs",
  "xml",
]);
/**
 * Keywords that only narrow what the others describe: generation ignores them and callers keep
 * the values their schema accepts (request-generator filters with Ajv).
 */
const NARROWING = new Set(["not", "propertyNames"]);
const UNDERSTOOD = new Set([
  "$ref",
  "type",
  "enum",
  "const",
  "oneOf",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "minProperties",
  "items",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
]);

/** Printable text: what a real client sends; hostile text is the mutations' job. */
const text = (minLength: number, maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      {
        weight: 9,
        arbitrary: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.'"),
      },
      { weight: 1, arbitrary: fc.constantFrom(..."éßø中ü€") },
    ),
    minLength,
    maxLength,
  });

export function resolve(document: Document, schema: Schema): Schema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === "string"; hops++) {
    if (hops > 20 || !current.$ref.startsWith("#/")) throw new Error(`Cannot follow $ref ${current.$ref}`);
    current = at(document, current.$ref.slice(1)) as Schema;
  }
  return current;
}

export function valuesOf(document: Document, schema: Schema): fc.Arbitrary<unknown> {
  const s = resolve(document, schema);
  const unknown = Object.keys(s).filter(
    (k) => !UNDERSTOOD.has(k) && !NARROWING.has(k) && !ANNOTATIONS.has(k) && !k.startsWith("x-"),
  );
  if (unknown.length > 0)
    throw new Error(`schema-arbitrary does not understand ${unknown.join(", ")} in ${JSON.stringify(s).slice(0, 200)}`);

  if ("const" in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const branches = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (branches) return fc.oneof(...branches.map((b) => valuesOf(document, branchOf(s, resolve(document, b)))));

  const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string | undefined];
  return fc.oneof(...types.map((type) => valuesOfType(document, s, type)));
}

/**
 * One branch of a oneOf/anyOf merged into its parent. A branch that names what it requires and
 * forbids the rest (`required` + `not`, the document's "exactly one way" rule) keeps only the
 * fields required by it or by the parent, so that values land in exactly that branch.
 */
function branchOf(parent: Schema, branch: Schema): Schema {
  const merged: Schema = { ...withoutKeys(parent, ["oneOf", "anyOf"]), ...withoutKeys(branch, ["not"]) };
  const required = [...new Set([...((parent.required ?? []) as string[]), ...((branch.required ?? []) as string[])])];
  if (required.length > 0) merged.required = required;
  if (branch.not && !branch.properties && parent.properties) {
    merged.properties = Object.fromEntries(
      Object.entries(parent.properties as Record<string, Schema>).filter(([k]) => required.includes(k)),
    );
  }
  return merged;
}

function withoutKeys(s: Schema, keys: string[]): Schema {
  return Object.fromEntries(Object.entries(s).filter(([k]) => !keys.includes(k)));
}

function valuesOfType(document: Document, s: Schema, type: string | undefined): fc.Arbitrary<unknown> {
  switch (type) {
    case "object":
      return objectsOf(document, s);
    case "array":
      return arraysOf(document, s);
    case "string":
      return stringsOf(s);
    case "integer":
      return fc.integer({ min: lowerBound(s, 1), max: upperBound(s, 1) });
    case "number":
      return numbersOf(s);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      throw new Error(`schema-arbitrary needs a type in ${JSON.stringify(s).slice(0, 200)}`);
  }
}

function objectsOf(document: Document, s: Schema): fc.Arbitrary<Record<string, unknown>> {
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  const required = new Set((s.required ?? []) as string[]);
  const model = Object.fromEntries(Object.entries(properties).map(([k, p]) => [k, valuesOf(document, p)]));
  const requiredKeys = Object.keys(properties).filter((k) => required.has(k));
  const least = (s.minProperties as number | undefined) ?? 0;
  return fc.record(model, { requiredKeys }).filter((v) => Object.keys(v).length >= least);
}

function arraysOf(document: Document, s: Schema): fc.Arbitrary<unknown[]> {
  const minLength = (s.minItems as number | undefined) ?? 0;
  // Valid arrays stay short: long ones are the mutations' business.
  const maxLength = Math.min((s.maxItems as number | undefined) ?? 5, minLength + 4);
  const items = valuesOf(document, (s.items ?? {}) as Schema);
  return s.uniqueItems
    ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
    : fc.array(items, { minLength, maxLength });
}

function stringsOf(s: Schema): fc.Arbitrary<string> {
  const minLength = (s.minLength as number | undefined) ?? 0;
  const maxLength = Math.min((s.maxLength as number | undefined) ?? 40, minLength + 40);
  const fits = (v: string) =>
    [...v].length >= minLength && [...v].length <= ((s.maxLength as number | undefined) ?? Infinity);
  // A date-time's pattern lets days through that the calendar lacks (02-31): those are no valid value.
  const realDate = (v: string) =>
    s.format !== "date-time" || new Date(v.slice(0, 10)).toISOString().startsWith(v.slice(0, 10));
  if (typeof s.pattern === "string") return fc.stringMatching(new RegExp(s.pattern)).filter(fits).filter(realDate);
  switch (s.format) {
    case "email":
      return fc
        .tuple(fc.stringMatching(/^[a-z][a-z0-9.]{0,15}$/), fc.stringMatching(/^[a-z]{1,10}\.(test|example)$/))
        .map(([local, domain]) => `${local.replace(/\.+$/, "")}@${domain}`)
        .filter(fits);
    case "uri":
      return fc
        .tuple(fc.stringMatching(/^[a-z]{1,12}\.example$/), fc.stringMatching(/^[a-z0-9/]{0,20}$/))
        .map(([host, path]) => `https://${host}/${path}`)
        .filter(fits);
    case undefined:
      return text(minLength, maxLength).filter(fits);
    default:
      throw new Error(`schema-arbitrary does not generate strings of format ${String(s.format)}`);
  }
}

function lowerBound(s: Schema, step: number): number {
  if (typeof s.exclusiveMinimum === "number") return s.exclusiveMinimum + step;
  return typeof s.minimum === "number" ? s.minimum : -1_000_000;
}

function upperBound(s: Schema, step: number): number {
  if (typeof s.exclusiveMaximum === "number") return s.exclusiveMaximum - step;
  return typeof s.maximum === "number" ? s.maximum : 1_000_000;
}

/** Numbers with at most three decimals (the order quantities' rule), within the bounds. */
function numbersOf(s: Schema): fc.Arbitrary<number> {
  const min = Math.ceil(lowerBound(s, 0.001) * 1000);
  const max = Math.floor(Math.min(upperBound(s, 0.001), 1_000_000) * 1000);
  const step = typeof s.multipleOf === "number" ? s.multipleOf : undefined;
  return fc
    .integer({ min, max })
    .map((n) => (step ? Number((Math.round(n / 1000 / step) * step).toFixed(6)) : n / 1000))
    .filter(
      (n) =>
        n >= lowerBound(s, 0) &&
        n <= upperBound(s, 0) &&
        !(typeof s.exclusiveMinimum === "number" && n <= s.exclusiveMinimum),
    );
}
