/**
 * Values that break exactly ONE rule the OpenAPI document states, derived from the document's
 * own schemas: a required field left out, a field the object does not allow, a wrong JSON type,
 * `null` where the schema has no null, a number or length or item count past its bound, a string
 * outside its pattern or enum. Each comes with the field's path and the rule, so a test that
 * finds the server accepting one can say which promise of the document is not kept.
 *
 * Bodies are mutated as JSON values; path and query parameters as the text a URL carries
 * (`paramBreakers`), because that is all a server ever receives for them.
 */
import { resolve } from "./schema-arbitrary";
import type { Document } from "./openapi-schemas";

type Schema = Record<string, unknown>;

export interface Broken<T> {
  /** The field, `items[0].orderedQuantity` style ("" for the body itself). */
  path: string;
  /** The rule broken: `required`, `additionalProperties`, `type`, `null`, `minimum` ... */
  rule: string;
  value: T;
}

/** JSON type names of a value, as JSON Schema's `type` sees it (an integer is a number too). */
function jsonTypes(v: unknown): string[] {
  if (v === null) return ["null"];
  if (Array.isArray(v)) return ["array"];
  if (typeof v === "number") return Number.isInteger(v) ? ["integer", "number"] : ["number"];
  return [typeof v];
}

const TYPE_PROBES: unknown[] = ["12", 12, 1.5, true, ["x"], { x: 1 }];

/** The non-null branches and whether null is allowed, through `type: [t, "null"]` and `anyOf`. */
function branchesOf(document: Document, s: Schema): { branches: Schema[]; nullable: boolean } {
  const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (alternatives && s.type === undefined) {
    const resolved = alternatives.map((b) => resolve(document, b));
    const nonNull = resolved.filter((b) => b.type !== "null");
    return { branches: nonNull, nullable: nonNull.length < resolved.length };
  }
  if (Array.isArray(s.type)) {
    const types = s.type as string[];
    return {
      branches: types.filter((t) => t !== "null").map((type) => ({ ...s, type })),
      nullable: types.includes("null"),
    };
  }
  return { branches: [s], nullable: s.type === "null" };
}

function allowedTypes(branches: Schema[]): string[] | null {
  const types: string[] = [];
  for (const b of branches) {
    if (typeof b.type === "string") types.push(b.type);
    else if (Array.isArray(b.enum)) types.push(...new Set(b.enum.flatMap(jsonTypes)));
    else if ("const" in b) types.push(...jsonTypes(b.const));
    else return null; // a branch of any type: no wrong type to send
  }
  return types;
}

const PATTERN_PROBES = ["", " ", "   ", "x", "1", "zz", "F1", "http://example.test/x", "no spaces allowed here", "ö"];

function offPattern(s: Schema): string | null {
  const pattern = new RegExp(s.pattern as string, "u");
  const min = (s.minLength as number | undefined) ?? 0;
  const max = (s.maxLength as number | undefined) ?? Infinity;
  return PATTERN_PROBES.find((p) => [...p].length >= min && [...p].length <= max && !pattern.test(p)) ?? null;
}

/** The one-rule breaks of a scalar or array at this place, without walking into it. */
function scalarBreakers(s: Schema, value: unknown, itemSample: unknown): { rule: string; value: unknown }[] {
  const out: { rule: string; value: unknown }[] = [];
  const num = (k: string) => (typeof s[k] === "number" ? s[k] : undefined);
  if (Array.isArray(s.enum) && s.enum.every((e) => typeof e === "string"))
    out.push({ rule: "enum", value: "zz-not-listed" });
  if (s.type === "integer" || s.type === "number") {
    const step = s.type === "integer" ? 1 : 0.5;
    if (num("minimum") !== undefined) out.push({ rule: "minimum", value: num("minimum")! - step });
    if (num("maximum") !== undefined) out.push({ rule: "maximum", value: num("maximum")! + step });
    if (num("exclusiveMinimum") !== undefined) out.push({ rule: "exclusiveMinimum", value: num("exclusiveMinimum") });
    if (num("exclusiveMaximum") !== undefined) out.push({ rule: "exclusiveMaximum", value: num("exclusiveMaximum") });
  }
  if (s.type === "string") {
    const min = num("minLength");
    if (min !== undefined && min > 0) out.push({ rule: "minLength", value: "x".repeat(min - 1) });
    if (num("maxLength") !== undefined) out.push({ rule: "maxLength", value: "x".repeat(num("maxLength")! + 1) });
    if (typeof s.pattern === "string") {
      const off = offPattern(s);
      if (off !== null) out.push({ rule: "pattern", value: off });
    }
  }
  if (s.type === "array" && Array.isArray(value)) {
    const fill = value.length > 0 ? value[0] : itemSample;
    const min = num("minItems");
    if (min !== undefined && min > 0) out.push({ rule: "minItems", value: value.slice(0, min - 1) });
    if (num("maxItems") !== undefined && fill !== undefined)
      out.push({ rule: "maxItems", value: Array.from({ length: num("maxItems")! + 1 }, () => structuredClone(fill)) });
    if (s.uniqueItems === true && value.length > 0)
      out.push({ rule: "uniqueItems", value: [...value, structuredClone(value[0])] });
  }
  return out;
}

/**
 * Every one-rule break of `value` (valid against `schema`) the document lets us derive, each as
 * the whole value with that one place changed. `itemSample(schema)` gives a valid element for
 * arrays that are empty in `value`.
 */
export function bodyBreakers(
  document: Document,
  schema: Schema,
  value: unknown,
  itemSample: (items: Schema) => unknown = () => undefined,
): Broken<unknown>[] {
  const out: Broken<unknown>[] = [];
  const walk = (s0: Schema, here: unknown, path: string, replace: (v: unknown) => unknown): void => {
    const s = resolve(document, s0);
    const { branches, nullable } = branchesOf(document, s);
    if (!nullable) out.push({ path, rule: "null", value: replace(null) });
    const types = allowedTypes(branches);
    const wrong = types && TYPE_PROBES.find((p) => !jsonTypes(p).some((t) => types.includes(t)));
    if (wrong !== undefined && wrong !== null) out.push({ path, rule: "type", value: replace(structuredClone(wrong)) });
    // Constraints are only one rule to break when one kind of value is allowed.
    if (branches.length !== 1) return;
    const b = branches[0];
    const items = b.items as Schema | undefined;
    for (const broken of scalarBreakers(b, here, items ? itemSample(resolve(document, items)) : undefined))
      out.push({ path, rule: broken.rule, value: replace(broken.value) });
    if (b.type === "array" && Array.isArray(here) && here.length > 0 && items) {
      walk(items, here[0], `${path}[0]`, (v) => replace([v, ...here.slice(1)]));
    }
    if (b.type === "object" && here !== null && typeof here === "object" && !Array.isArray(here)) {
      const obj = here as Record<string, unknown>;
      for (const name of (b.required ?? []) as string[]) {
        if (!(name in obj)) continue;
        const { [name]: _dropped, ...rest } = obj;
        out.push({ path: join(path, name), rule: "required", value: replace(rest) });
      }
      if (b.additionalProperties === false)
        out.push({
          path: join(path, "zzUnknown"),
          rule: "additionalProperties",
          value: replace({ ...obj, zzUnknown: 1 }),
        });
      for (const [name, propSchema] of Object.entries((b.properties ?? {}) as Record<string, Schema>)) {
        if (name in obj) walk(propSchema, obj[name], join(path, name), (v) => replace({ ...obj, [name]: v }));
      }
    }
  };
  walk(schema, value, "", (v) => structuredClone(v));
  return out;
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

/** The one-rule breaks of a path or query parameter, as the text of a URL. */
export function paramBreakers(document: Document, schema: Schema): Broken<string>[] {
  const s = resolve(document, schema);
  const out: { rule: string; value: unknown }[] = [];
  if (s.type === "integer" || s.type === "number") {
    out.push({ rule: "type", value: "abc" });
    if (s.type === "integer") out.push({ rule: "type", value: "1.5" });
  }
  out.push(...scalarBreakers(s, undefined, undefined));
  return out.map((b) => ({ path: "", rule: b.rule, value: String(b.value) }));
}

/** Every field path of a body schema (through arrays as `[0]`), to show that each was broken at least once. */
export function fieldPaths(document: Document, schema: Schema, path = ""): string[] {
  const s = resolve(document, schema);
  const { branches } = branchesOf(document, s);
  if (branches.length !== 1) return [path];
  const b = branches[0];
  if (b.type === "array" && b.items) return [path, ...fieldPaths(document, b.items as Schema, `${path}[0]`)];
  if (b.type !== "object") return [path];
  return [
    path,
    ...Object.entries((b.properties ?? {}) as Record<string, Schema>).flatMap(([name, p]) =>
      fieldPaths(document, p, join(path, name)),
    ),
  ];
}
