/**
 * The rules every JSON value from a client passes before any service sees it (bodies and query
 * strings alike), checked once, here: by the gateway for every route (gateway/body-parser.ts),
 * and by the orders service for each line of an NDJSON import, which streams past the gateway
 * (services/orders/orders.import-line.ts):
 *
 * - no `__proto__`, `constructor` or `prototype` key at any depth: such a key is refused as an
 *   unknown field, so it can never reach an object's prototype when moleculer-web merges the body
 *   into the action's params (`Object.assign` would *set the prototype* from an own `__proto__`
 *   key, and the validator would then read fields through inheritance);
 * - no string (value or key) the database cannot store as sent: U+0000 or a lone surrogate;
 * - bounded nesting, array lengths and key counts, so one request costs bounded work.
 *
 * Problems are collected up to MAX_REPORTED_PROBLEMS; past that they are only counted.
 */
import { InvalidInputError, MalformedRequestError, type FieldError } from "../errors";
import { MAX_REPORTED_PROBLEMS } from "./problem";

/** The media type of an import's upload and of its results: one JSON value per line. */
export const NDJSON_MEDIA_TYPE = "application/x-ndjson";

/** Bytes of one request body (and of one line of an NDJSON import: one order body). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

export const JSON_LIMITS = {
  /** Objects and arrays inside one another; the deepest valid order is 4. */
  maxDepth: 32,
  /** Elements of one array (an order's items are ≤ 1,000 by schema). */
  maxArrayLength: 10_000,
  /** Keys of one object. */
  maxObjectKeys: 1_000,
} as const;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * `__proto__`, `constructor`, `prototype`, and every other name of Object.prototype
 * (`toString`, `valueOf`, `hasOwnProperty`…): an own key of that name shadows what libraries
 * call on any object (`{"toString": ""}` made a validator's String(value) throw, a 500).
 * No field of ours has such a name, so all are refused as unknown fields.
 */
const FORBIDDEN_KEYS = new Set(["prototype", ...Object.getOwnPropertyNames(Object.prototype)]);

/** True when `key` could reach, replace or shadow an object's prototype. */
export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN_KEYS.has(key);
}

/** Why a string cannot be stored as sent, or null when it can. */
export function unstorableString(s: string): string | null {
  if (s.includes("\u0000")) return "Must not contain the NUL character (U+0000).";
  if (LONE_SURROGATE.test(s)) return "Must not contain a lone UTF-16 surrogate (not a Unicode character).";
  return null;
}

/** `items[2].orderedQuantity` style paths, the way the validator names fields. */
function childPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

/** The problems found, bounded; `count` is how many there were in all. */
export class ProblemList {
  readonly problems: FieldError[] = [];
  count = 0;

  add(path: string, message: string): void {
    this.count++;
    if (this.problems.length < MAX_REPORTED_PROBLEMS) this.problems.push({ path, message });
  }

  /** Throws the 422 that names the problems, when there are any. */
  throwIfAny(): void {
    if (this.count === 0) return;
    throw new InvalidInputError(this.problems, `${this.count} field(s) are invalid.`, this.count);
  }
}

function inspectObject(value: Record<string, unknown>, path: string, depth: number, found: ProblemList): void {
  const keys = Object.keys(value);
  if (keys.length > JSON_LIMITS.maxObjectKeys) {
    found.add(path, `Has ${keys.length} fields; at most ${JSON_LIMITS.maxObjectKeys} are accepted.`);
    return;
  }
  for (const key of keys) {
    const at = childPath(path, key);
    if (isForbiddenKey(key)) {
      found.add(at, "This field is not allowed.");
      continue;
    }
    const why = unstorableString(key);
    if (why) {
      found.add(at, `This field's name is not allowed: ${why}`);
      continue;
    }
    inspect(value[key], at, depth + 1, found);
  }
}

function inspect(value: unknown, path: string, depth: number, found: ProblemList): void {
  if (typeof value === "string") {
    const why = unstorableString(value);
    if (why) found.add(path, why);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  if (depth > JSON_LIMITS.maxDepth) {
    found.add(path, `Nested too deeply; at most ${JSON_LIMITS.maxDepth} levels are accepted.`);
    return;
  }
  if (Array.isArray(value)) {
    if (value.length > JSON_LIMITS.maxArrayLength) {
      found.add(path, `Has ${value.length} elements; at most ${JSON_LIMITS.maxArrayLength} are accepted.`);
      return;
    }
    value.forEach((element, i) => inspect(element, childPath(path, i), depth + 1, found));
    return;
  }
  inspectObject(value as Record<string, unknown>, path, depth, found);
}

/** Every problem of a parsed JSON value (a body, or the query string as qs parsed it). */
export function inspectJsonValue(value: unknown, into = new ProblemList()): ProblemList {
  inspect(value, "", 1, into);
  return into;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A request body → its JSON value, or the 400 / 422 that refuses it. JSON.parse itself only ever
 * makes own properties (an own `__proto__` key, not a prototype); the inspection then refuses
 * that key before anything could copy it with assignment semantics.
 */
export function parseJsonBody(raw: Buffer): unknown {
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    throw new MalformedRequestError("The body is not valid UTF-8.");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MalformedRequestError(`The body is not valid JSON: ${(err as Error).message}`);
  }
  inspectJsonValue(value).throwIfAny();
  return value;
}
