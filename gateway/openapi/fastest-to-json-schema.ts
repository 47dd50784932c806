/**
 * fastest-validator rules → JSON Schema 2020-12 (the dialect of OpenAPI 3.1), so that the
 * OpenAPI document describes requests with the very schemas the actions validate with.
 *
 * It covers the rule types this project uses. A rule type or option it does not know is an
 * error, not a silent `{}`: a schema the document cannot describe must be noticed (the
 * OpenAPI unit test converts every action's params).
 *
 * Sanitisers (`trim`, `normalize`, `convert`, `lowercase` ...) change the value before it is
 * checked; JSON Schema has no such notion, so they are left out and the schema describes the
 * value as sent by a well-behaved client (a trimmed string that must not be empty says so with
 * the pattern `\S`).
 *
 * Rules checked by code say what they accept themselves (shared/http/params.ts): `jsonSchema`
 * replaces the conversion, `jsonSchemaAlso` adds the rules across fields to it; at the root of
 * an action's params, `$$jsonSchemaAlso` adds a rule of the request's body as a whole
 * (`minProperties: 1`: at least one field), which fastest-validator ignores as a meta key.
 */

export type JsonSchema = { [keyword: string]: unknown };

/** A fastest-validator rule in any of its forms: object, shorthand string or array (multi). */
export type FvRule = string | FvRuleObject | FvRule[];
export interface FvRuleObject {
  type?: string;
  [option: string]: unknown;
}
/** The root of an action's `params`: field rules plus `$$` meta keys. */
export type FvSchema = { [field: string]: unknown };

export class UnsupportedRuleError extends Error {
  constructor(path: string, what: string) {
    super(`Cannot convert the fastest-validator rule at "${path || "(root)"}" to JSON Schema: ${what}.`);
    this.name = "UnsupportedRuleError";
  }
}

/** Options that never change which values are valid, or change them before the check. */
const IGNORED = new Set([
  "type",
  "optional",
  "nullable",
  "default",
  "label",
  "messages",
  "convert",
  "custom",
  "$$async",
  "jsonSchemaAlso",
  "trim",
  "trimLeft",
  "trimRight",
  "lowercase",
  "uppercase",
  "localeCompare",
  "normalize",
  "mode",
]);

/** `"string|optional|max:5"` → `{ type: "string", optional: true, max: 5 }` (fastest-validator's own grammar). */
function parseShorthand(text: string): FvRuleObject {
  const [type, ...flags] = text.split("|").map((s) => s.trim());
  if (type.endsWith("[]")) return { type: "array", items: type.slice(0, -2), ...parseShorthandFlags(flags) };
  return { type, ...parseShorthandFlags(flags) };
}

function parseShorthandFlags(flags: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const flag of flags) {
    const colon = flag.indexOf(":");
    if (colon === -1) {
      if (flag.startsWith("no-")) out[flag.slice(3)] = false;
      else out[flag] = true;
      continue;
    }
    const raw = flag.slice(colon + 1).trim();
    out[flag.slice(0, colon).trim()] =
      raw === "true" ? true : raw === "false" ? false : Number.isNaN(Number(raw)) ? raw : Number(raw);
  }
  return out;
}

/** Any form of rule → its object form, without touching the caller's objects. */
function resolve(rule: FvRule): FvRuleObject {
  if (typeof rule === "string") return parseShorthand(rule);
  if (Array.isArray(rule)) {
    const rules = rule.map(resolve);
    return { type: "multi", rules, ...(rules.every((r) => r.optional === true) ? { optional: true } : {}) };
  }
  if (rule.$$type !== undefined) {
    const { $$type, ...props } = rule;
    return { ...resolve($$type as FvRule), props };
  }
  return rule;
}

function isMetaKey(key: string): boolean {
  return key.startsWith("$$");
}

/** Checks that every option of `rule` is one this converter understands. */
function assertKnownOptions(rule: FvRuleObject, known: string[], path: string): void {
  for (const key of Object.keys(rule)) {
    if (!IGNORED.has(key) && !known.includes(key)) {
      throw new UnsupportedRuleError(path, `option "${key}" of type "${rule.type}"`);
    }
  }
}

function patternSource(pattern: unknown, path: string): string {
  if (pattern instanceof RegExp) {
    if (pattern.flags.replace(/[gu]/g, "") !== "")
      throw new UnsupportedRuleError(path, `pattern flags "${pattern.flags}"`);
    return pattern.source;
  }
  if (typeof pattern === "string") return pattern;
  throw new UnsupportedRuleError(path, "a pattern that is neither a string nor a RegExp");
}

/** Whether every integer between the bounds fits 32 bits (the `format` client generators size it by). */
function fitsInt32(min: unknown, max: unknown): boolean {
  return typeof min === "number" && typeof max === "number" && min >= -(2 ** 31) && max <= 2 ** 31 - 1;
}

type Converter = (rule: FvRuleObject, path: string) => JsonSchema;

const CONVERTERS: Record<string, Converter> = {
  any: (rule, path) => {
    assertKnownOptions(rule, [], path);
    return {};
  },

  string: (rule, path) => {
    assertKnownOptions(
      rule,
      [
        "min",
        "max",
        "length",
        "pattern",
        "patternFlags",
        "empty",
        "enum",
        "numeric",
        "alpha",
        "alphanum",
        "alphadash",
        "hex",
      ],
      path,
    );
    if (rule.patternFlags !== undefined) throw new UnsupportedRuleError(path, "patternFlags");
    const s: JsonSchema = { type: "string" };
    const min = rule.length ?? rule.min ?? (rule.empty === false ? 1 : undefined);
    const max = rule.length ?? rule.max;
    if (min !== undefined) s.minLength = min;
    if (max !== undefined) s.maxLength = max;
    const patterns = [
      rule.pattern !== undefined ? patternSource(rule.pattern, path) : null,
      rule.numeric ? "^-?[0-9]\\d*(\\.\\d+)?$" : null,
      rule.alpha ? "^[a-zA-Z]+$" : null,
      rule.alphanum ? "^[a-zA-Z0-9]+$" : null,
      rule.alphadash ? "^[a-zA-Z0-9_-]+$" : null,
      rule.hex ? "^[0-9a-fA-F]+$" : null,
      // Trimmed first: only spaces would be empty.
      rule.trim === true && min !== undefined && Number(min) >= 1 ? "\\S" : null,
    ].filter((p): p is string => p !== null);
    if (patterns.length === 1) s.pattern = patterns[0];
    if (patterns.length > 1) s.allOf = patterns.map((pattern) => ({ pattern }));
    if (rule.enum !== undefined) s.enum = rule.enum;
    return s;
  },

  email: (rule, path) => {
    assertKnownOptions(rule, ["min", "max", "empty"], path);
    return {
      type: "string",
      format: "email",
      ...(rule.min !== undefined ? { minLength: rule.min } : {}),
      ...(rule.max !== undefined ? { maxLength: rule.max } : {}),
    };
  },

  url: (rule, path) => {
    assertKnownOptions(rule, ["empty"], path);
    // fastest-validator's url rule accepts http(s) URLs only; the pattern says so.
    return { type: "string", format: "uri", pattern: "^https?://\\S+" };
  },

  uuid: (rule, path) => {
    assertKnownOptions(rule, ["version"], path);
    return { type: "string", format: "uuid" };
  },

  number: (rule, path) => {
    assertKnownOptions(rule, ["integer", "min", "max", "positive", "negative", "equal", "notEqual"], path);
    const s: JsonSchema = { type: rule.integer ? "integer" : "number" };
    if (rule.integer) s.format = fitsInt32(rule.min, rule.max) ? "int32" : "int64";
    if (rule.min !== undefined) s.minimum = rule.min;
    if (rule.max !== undefined) s.maximum = rule.max;
    if (rule.positive) s.exclusiveMinimum = 0;
    if (rule.negative) s.exclusiveMaximum = 0;
    if (rule.equal !== undefined) s.const = rule.equal;
    if (rule.notEqual !== undefined) s.not = { const: rule.notEqual };
    return s;
  },

  boolean: (rule, path) => {
    assertKnownOptions(rule, [], path);
    return { type: "boolean" };
  },

  enum: (rule, path) => {
    assertKnownOptions(rule, ["values"], path);
    const values: unknown = rule.values;
    if (!Array.isArray(values)) throw new UnsupportedRuleError(path, "an enum without values");
    return { enum: values.slice() };
  },

  equal: (rule, path) => {
    assertKnownOptions(rule, ["value", "strict"], path);
    return { const: rule.value };
  },

  forbidden: (rule, path) => {
    assertKnownOptions(rule, ["remove"], path);
    return { not: {} };
  },

  array: (rule, path) => {
    assertKnownOptions(rule, ["items", "min", "max", "length", "unique", "empty", "contains", "enum"], path);
    if (rule.contains !== undefined || rule.enum !== undefined)
      throw new UnsupportedRuleError(path, "array contains/enum");
    const s: JsonSchema = { type: "array" };
    if (rule.items !== undefined) s.items = convertRule(rule.items as FvRule, `${path}[]`);
    const min = rule.length ?? rule.min ?? (rule.empty === false ? 1 : undefined);
    const max = rule.length ?? rule.max;
    if (min !== undefined) s.minItems = min;
    if (max !== undefined) s.maxItems = max;
    if (rule.unique) s.uniqueItems = true;
    return s;
  },

  tuple: (rule, path) => {
    assertKnownOptions(rule, ["items", "empty"], path);
    const items = (rule.items as FvRule[] | undefined) ?? [];
    return {
      type: "array",
      prefixItems: items.map((item, i) => convertRule(item, `${path}[${i}]`)),
      minItems: items.length,
      maxItems: items.length,
    };
  },

  object: (rule, path) => {
    assertKnownOptions(rule, ["props", "properties", "strict", "minProps", "maxProps"], path);
    const props = (rule.props ?? rule.properties) as FvSchema | undefined;
    const s: JsonSchema = props ? objectSchema(props, rule.strict, path) : { type: "object" };
    if (rule.minProps !== undefined) s.minProperties = rule.minProps;
    if (rule.maxProps !== undefined) s.maxProperties = rule.maxProps;
    return s;
  },

  record: (rule, path) => {
    assertKnownOptions(rule, ["key", "value"], path);
    return {
      type: "object",
      ...(rule.key !== undefined ? { propertyNames: convertRule(rule.key as FvRule, `${path}.<key>`) } : {}),
      ...(rule.value !== undefined
        ? { additionalProperties: convertRule(rule.value as FvRule, `${path}.<value>`) }
        : {}),
    };
  },

  multi: (rule, path) => {
    assertKnownOptions(rule, ["rules"], path);
    // fastest-validator accepts a value when any of the rules does: anyOf, not oneOf.
    return { anyOf: (rule.rules as FvRule[]).map((r, i) => convertRule(r, `${path}<${i}>`)) };
  },
};

function withNull(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === "string") return { ...schema, type: [schema.type, "null"] };
  return { anyOf: [schema, { type: "null" }] };
}

/** Whether a field may be left out of its object. */
function isOptional(rule: FvRule): boolean {
  const r = resolve(rule);
  return r.optional === true || r.default !== undefined || r.type === "forbidden";
}

/** One rule → its JSON Schema. `path` names the field in error messages. */
export function convertRule(rule: FvRule, path = ""): JsonSchema {
  const r = resolve(rule);
  let schema: JsonSchema;
  if (r.jsonSchema !== undefined) {
    // A rule checked by code (`type: "any"` with `custom`) that states what it accepts.
    if (r.type !== "any") throw new UnsupportedRuleError(path, `jsonSchema on a rule of type "${String(r.type)}"`);
    schema = { ...(r.jsonSchema as JsonSchema) };
  } else {
    const convert = CONVERTERS[r.type ?? ""];
    if (!convert) throw new UnsupportedRuleError(path, `type "${String(r.type)}"`);
    schema = convert(r, path);
  }
  if (r.jsonSchemaAlso !== undefined) schema = { ...schema, ...(r.jsonSchemaAlso as JsonSchema) };
  if (r.default !== undefined && typeof r.default !== "function") schema = { ...schema, default: r.default };
  // fastest-validator also lets `null` through for an optional field; the document only says
  // "may be left out" there, and keeps `null` for fields that give it a meaning (`nullable`).
  return r.nullable === true ? withNull(schema) : schema;
}

function objectSchema(props: FvSchema, strict: unknown, path: string): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [name, rule] of Object.entries(props)) {
    if (isMetaKey(name)) continue;
    const fieldPath = path ? `${path}.${name}` : name;
    properties[name] = convertRule(rule as FvRule, fieldPath);
    if (!isOptional(rule as FvRule)) required.push(name);
  }
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    // `strict: "remove"` drops unknown fields instead of refusing them: they stay allowed.
    ...(strict === true ? { additionalProperties: false } : {}),
  };
}

/** An action's whole `params` (fields plus `$$strict`) → an object schema. */
export function convertParams(params: FvSchema): JsonSchema {
  for (const key of Object.keys(params)) {
    if (isMetaKey(key) && !["$$strict", "$$async", "$$jsonSchemaAlso"].includes(key))
      throw new UnsupportedRuleError("", `meta key "${key}"`);
  }
  return { ...objectSchema(params, params.$$strict, ""), ...(params.$$jsonSchemaAlso as JsonSchema | undefined) };
}
