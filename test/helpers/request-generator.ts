/**
 * Requests for one operation of the OpenAPI document, as fast-check arbitraries: VALID ones
 * (path, query, header parameters and body drawn from their schemas) and INVALID ones (a valid
 * one mutated: a required field dropped, an unknown field, a wrong type, null, out of range,
 * a `__proto__` key, a lone surrogate or NUL, a huge array, odd spellings of an id, a caller
 * without the scope). Each request says whether the document forbids it, and why: the body and
 * parameters are checked against the document's own schemas (Ajv), so the label follows the
 * document as it changes.
 */
import fc from "fast-check";
import { DocumentSchemas, type Document } from "./openapi-schemas";
import {
  collectionOfParameter,
  fieldsOf,
  fillPath,
  type BodyField,
  type Operation,
  type Parameter,
} from "./openapi-operations";
import { valuesOf } from "./schema-arbitrary";

export type ActorName = "anonymous" | "admin" | "partner" | "webhooks" | "backoffice";

export interface GeneratedRequest {
  op: string;
  /** "valid" or the mutation's name. */
  kind: string;
  actor: ActorName;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  /** Sent as is instead of `body` (a body JSON.stringify cannot write, or none at all). */
  rawBody?: string;
  /** Why the document (or the team's stated policy) forbids this request; null when it allows it. */
  forbidden: string | null;
}

export interface GeneratorContext {
  document: Document;
  schemas: DocumentSchemas;
  /** Which actor calls an operation requiring this scope (null: open to anyone). */
  actorFor: (scope: string | null) => fc.Arbitrary<ActorName>;
  /** An actor lacking the scope, if any. */
  actorLacking: (scope: string) => ActorName | null;
  /** Ids that exist, by collection, so that valid requests reach real records too. */
  knownIds: Record<string, number[]>;
}

export const ID_SPELLINGS = [
  "0x10",
  " 1",
  "1e3",
  "+1",
  "01",
  "-1",
  "1.0",
  "１",
  "0",
  "9223372036854775808",
  "99999999999999999999999",
];
const MAX_INT = 2 ** 31 - 1;

/** A parameter's raw text against its schema, as a server reading a query string or a path must. */
function parameterProblem(ctx: GeneratorContext, p: Parameter, raw: string): string | null {
  const type = p.schema.type;
  if (type === "integer" || type === "number") {
    const grammar = type === "integer" ? /^-?(0|[1-9]\d*)$/ : /^-?(0|[1-9]\d*)(\.\d+)?$/;
    if (!grammar.test(raw)) return `${p.in} ${p.name}=${JSON.stringify(raw)} is not a plain decimal ${type}`;
    const errors = ctx.schemas.validate(p.schemaAt, Number(raw));
    return errors.length > 0 ? `${p.in} ${p.name}: ${errors[0]}` : null;
  }
  const errors = ctx.schemas.validate(p.schemaAt, raw);
  return errors.length > 0 ? `${p.in} ${p.name}=${JSON.stringify(raw).slice(0, 40)}: ${errors[0]}` : null;
}

interface Parts {
  actor: ActorName;
  params: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
}

function validParts(ctx: GeneratorContext, op: Operation): fc.Arbitrary<Parts> {
  const paramValue = (p: Parameter): fc.Arbitrary<string> => {
    if (p.in === "path") {
      const known = ctx.knownIds[collectionOfParameter(op.template, p.name)] ?? [];
      const any = fc.integer({ min: 1, max: MAX_INT }).map(String);
      return known.length > 0 ? fc.oneof(fc.constantFrom(...known.map(String)), any) : any;
    }
    return valuesOf(ctx.document, p.schema).map(String);
  };
  const group = (where: Parameter["in"]) => {
    const ps = op.parameters.filter((p) => p.in === where);
    return fc.record(Object.fromEntries(ps.map((p) => [p.name, paramValue(p)])), {
      requiredKeys: ps.filter((p) => p.required).map((p) => p.name),
    }) as fc.Arbitrary<Record<string, string>>;
  };
  const body = op.body
    ? valuesOf(ctx.document, op.body.schema).filter((b) => ctx.schemas.validate(op.body!.schemaAt, b).length === 0)
    : fc.constant(undefined);
  return fc.record({
    actor: ctx.actorFor(op.scope),
    params: group("path"),
    query: group("query"),
    headers: group("header"),
    body,
  });
}

function toRequest(
  op: Operation,
  kind: string,
  parts: Parts,
  forbidden: string | null,
  rawBody?: string,
): GeneratedRequest {
  const query = new URLSearchParams(parts.query).toString();
  return {
    op: op.key,
    kind,
    actor: parts.actor,
    method: op.method,
    path: fillPath(op.template, parts.params) + (query ? `?${query}` : ""),
    headers: parts.headers,
    body: rawBody === undefined ? parts.body : undefined,
    rawBody,
    forbidden,
  };
}

/** The object holding the field at `steps` inside `body` (creating objects on the way), and the key. */
function holderOf(
  body: unknown,
  steps: string[],
): { holder: Record<string, unknown> | unknown[]; key: string | number } | null {
  let node = body as Record<string, unknown>;
  for (const step of steps.slice(0, -1)) {
    if (step === "[]") {
      if (!Array.isArray(node) || node.length === 0) return null;
      node = node[0] as Record<string, unknown>;
    } else {
      if (typeof node !== "object" || node === null) return null;
      node[step] ??= {};
      node = node[step] as Record<string, unknown>;
    }
  }
  if (typeof node !== "object" || node === null) return null;
  const last = steps[steps.length - 1];
  return { holder: node, key: last === "[]" ? 0 : last };
}

type Mutation = (
  parts: Parts,
  fields: BodyField[],
  pick: number,
) => { kind: string; parts: Parts; rawBody?: string; policy?: string } | null;

const clone = (p: Parts): Parts => ({
  ...p,
  params: { ...p.params },
  query: { ...p.query },
  headers: { ...p.headers },
  body: p.body === undefined ? undefined : structuredClone(p.body),
});

/** Applies `change` to one field of the body (the pick-th of those present). */
function onField(
  kind: string,
  applies: (f: BodyField) => boolean,
  change: (holder: Record<string, unknown> | unknown[], key: string | number, f: BodyField, pick: number) => void,
  policy?: string,
): Mutation {
  return (parts, fields, pick) => {
    const candidates = fields.filter(applies);
    if (parts.body === undefined || candidates.length === 0) return null;
    const field = candidates[pick % candidates.length];
    const next = clone(parts);
    const at = holderOf(next.body, field.steps);
    if (!at) return null;
    change(at.holder, at.key, field, pick);
    return { kind: `${kind} ${field.path}`, parts: next, policy };
  };
}

const set = (h: Record<string, unknown> | unknown[], k: string | number, v: unknown) => {
  (h as Record<string | number, unknown>)[k] = v;
};
const typeOf = (f: BodyField) => f.schema.type as string | undefined;
const isObject = (f: BodyField) => typeOf(f) === "object";

function wrongTypeValue(f: BodyField): unknown {
  switch (typeOf(f)) {
    case "string":
      return 12345;
    case "integer":
    case "number":
      return "12";
    case "boolean":
      return "true";
    case "array":
      return { 0: "x" };
    case "object":
      return ["x"];
    default:
      return { nested: true };
  }
}

function outOfRangeValue(f: BodyField): unknown {
  const s = f.schema;
  if (typeof s.maximum === "number") return s.maximum + 1;
  if (typeof s.exclusiveMinimum === "number") return s.exclusiveMinimum;
  if (typeof s.minimum === "number") return s.minimum - 1;
  if (typeof s.maxLength === "number") return "x".repeat(s.maxLength + 1);
  if (typeof s.minLength === "number" && s.minLength > 0) return "";
  if (typeof s.maxItems === "number") return Array.from({ length: s.maxItems + 1 }, () => ({}));
  return null;
}

const MUTATIONS: Mutation[] = [
  onField(
    "drop",
    () => true,
    (h, k) => {
      if (Array.isArray(h)) h.splice(Number(k), 1);
      else delete h[k as string];
    },
  ),
  onField(
    "unknown field beside",
    () => true,
    (h) => {
      if (!Array.isArray(h)) h.zzUnknown = 1;
    },
  ),
  onField("unknown field inside", isObject, (h, k) => {
    const o = (h as Record<string | number, unknown>)[k];
    if (o && typeof o === "object") (o as Record<string, unknown>).zzUnknown = 1;
  }),
  onField(
    "wrong type",
    () => true,
    (h, k, f) => set(h, k, wrongTypeValue(f)),
  ),
  onField(
    "null",
    () => true,
    (h, k) => set(h, k, null),
  ),
  onField(
    "out of range",
    (f) => outOfRangeValue(f) !== null,
    (h, k, f) => set(h, k, outOfRangeValue(f)),
  ),
  onField(
    "huge array",
    (f) => typeOf(f) === "array",
    (h, k) =>
      set(
        h,
        k,
        Array.from({ length: 20_000 }, () => 1),
      ),
  ),
  onField(
    "lone surrogate",
    (f) => typeOf(f) === "string",
    (h, k) => set(h, k, "ab\ud800cd"),
    "a string the server cannot store as sent (lone surrogate) is refused",
  ),
  onField(
    "NUL",
    (f) => typeOf(f) === "string",
    (h, k) => set(h, k, "ab\u0000cd"),
    "a string the server cannot store as sent (U+0000) is refused",
  ),
  onField(
    "id spelling",
    (f) => typeOf(f) === "integer",
    (h, k, _f, pick) => set(h, k, ID_SPELLINGS[pick % ID_SPELLINGS.length]),
  ),
  onField(
    "id as a fraction",
    (f) => typeOf(f) === "integer",
    (h, k) => set(h, k, 1.5),
  ),
  // `__proto__` as an own key, carrying a field that belongs to the object (the dangerous case: read through inheritance).
  onField("__proto__ key in", isObject, (h, k, f) => {
    const o = (h as Record<string | number, unknown>)[k];
    if (!o || typeof o !== "object" || Array.isArray(o)) return;
    const [name] = Object.keys(f.schema.properties ?? {});
    Object.defineProperty(o, "__proto__", {
      value: { [name ?? "x"]: "smuggled" },
      enumerable: true,
      configurable: true,
      writable: true,
    });
  }),
  (parts, fields, pick) => {
    if (parts.body === undefined || typeof parts.body !== "object" || parts.body === null) return null;
    const next = clone(parts);
    const [name] = fields.map((f) => f.steps[0]).slice(pick % Math.max(fields.length, 1));
    const moved = (next.body as Record<string, unknown>)[name ?? ""];
    delete (next.body as Record<string, unknown>)[name ?? ""];
    Object.defineProperty(next.body, "__proto__", {
      value: { [name ?? "x"]: moved ?? 1 },
      enumerable: true,
      configurable: true,
      writable: true,
    });
    return { kind: `__proto__ key at the top holding ${name}`, parts: next };
  },
  (parts, _f, pick) =>
    parts.body === undefined
      ? null
      : {
          kind: "body is not an object",
          parts: { ...clone(parts), body: undefined },
          rawBody: ["[]", "null", "42", '"x"'][pick % 4],
        },
  (parts) =>
    parts.body === undefined ? null : { kind: "no body", parts: { ...clone(parts), body: undefined }, rawBody: "" },
  (parts, _f, pick) => {
    const names = Object.keys(parts.params);
    if (names.length === 0) return null;
    const next = clone(parts);
    const name = names[pick % names.length];
    next.params[name] = ID_SPELLINGS[pick % ID_SPELLINGS.length];
    return { kind: `path ${name} spelt ${JSON.stringify(next.params[name])}`, parts: next };
  },
  (parts, _f, pick) => {
    const next = clone(parts);
    next.query.limit = ID_SPELLINGS[pick % ID_SPELLINGS.length];
    return { kind: `query limit spelt ${JSON.stringify(next.query.limit)}`, parts: next };
  },
  (parts) => ({
    kind: "unknown query parameter",
    parts: { ...clone(parts), query: { ...parts.query, zzUnknown: "1" } },
  }),
  (parts) => ({
    kind: "bad X-Request-Id",
    parts: { ...clone(parts), headers: { ...parts.headers, "X-Request-Id": "not allowed; spaces & semicolons" } },
  }),
];

/** Requests for `op`: about a third valid, the rest mutated, each labelled. */
export function requestsFor(ctx: GeneratorContext, op: Operation): fc.Arbitrary<GeneratedRequest> {
  const fields = op.body ? fieldsOf(ctx.document, op.body.schema) : [];
  const wrongActor = op.scope ? ctx.actorLacking(op.scope) : null;
  return fc
    .tuple(validParts(ctx, op), fc.nat({ max: MUTATIONS.length + 1 }), fc.nat({ max: 10_000 }), fc.boolean())
    .map(([parts, which, pick, mutate]) => {
      if (!mutate) return label(ctx, op, toRequest(op, "valid", parts, null), parts);
      if (which === MUTATIONS.length && wrongActor) {
        return toRequest(
          op,
          `actor ${wrongActor} lacks ${op.scope}`,
          { ...parts, actor: wrongActor },
          `scope ${op.scope} is required`,
        );
      }
      const mutated = MUTATIONS[which % MUTATIONS.length](parts, fields, pick);
      if (!mutated) return label(ctx, op, toRequest(op, "valid", parts, null), parts);
      const request = toRequest(op, mutated.kind, mutated.parts, null, mutated.rawBody);
      return mutated.policy
        ? { ...request, forbidden: mutated.policy }
        : label(ctx, op, request, mutated.parts, mutated.rawBody);
    });
}

/** Sets `forbidden` from the document: the body against its schema, each parameter against its own. */
function label(
  ctx: GeneratorContext,
  op: Operation,
  request: GeneratedRequest,
  parts: Parts,
  rawBody?: string,
): GeneratedRequest {
  const problems: string[] = [];
  if (op.body) {
    let body: unknown = parts.body;
    if (rawBody !== undefined) body = rawBody === "" ? undefined : (JSON.parse(rawBody) as unknown);
    if (body === undefined) {
      if (op.body.required) problems.push("the request body is required");
    } else {
      problems.push(
        ...ctx.schemas.validate(op.body.schemaAt, JSON.parse(JSON.stringify(body))).map((e) => `body ${e}`),
      );
    }
  }
  for (const p of op.parameters) {
    const where = p.in === "path" ? parts.params : p.in === "query" ? parts.query : parts.headers;
    const raw = Object.entries(where).find(([k]) => k.toLowerCase() === p.name.toLowerCase())?.[1];
    if (raw === undefined) {
      if (p.required) problems.push(`${p.in} ${p.name} is required`);
      continue;
    }
    const problem = parameterProblem(ctx, p, raw);
    if (problem) problems.push(problem);
  }
  return { ...request, forbidden: problems.length > 0 ? problems.join("; ") : null };
}
