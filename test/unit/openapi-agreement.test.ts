/**
 * The OpenAPI document and the server agree, both ways, checked against the running code rather
 * than against the document itself: a broker with every service and the gateway (in process, no
 * transporter, PGlite in memory) serves the document over HTTP, and
 *
 * - the (method, path) pairs the gateway routes are exactly the documented operations;
 * - each operation's action is registered, with the scope the document states;
 * - requests drawn from the document's schemas pass the action's real validator (the broker's
 *   fastest-validator, compiled from the action's `params`);
 * - a request breaking one documented rule is refused by it;
 * - and a sample of what the validator refuses is refused by the document too (Ajv).
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import fc from "fast-check";
import type { ServiceBroker } from "moleculer";
import { encodeCursor } from "../../shared/http/paging";
import { encodeFeedCursor } from "../../services/webhooks/webhooks.feed-cursor";
import { ADMIN, startTestBroker, type TestBroker } from "../helpers/broker";
import { DocumentSchemas, type Document } from "../helpers/openapi-schemas";
import { operationsOf, type Operation, type Parameter } from "../helpers/openapi-operations";
import { bodyBreakers, fieldPaths, paramBreakers, type Broken } from "../helpers/rule-breakers";
import { valuesOf } from "../helpers/schema-arbitrary";

type Checker = (
  params: object,
  opts: { meta: object },
) => true | { field?: string; message?: string }[] | Promise<true | { field?: string; message?: string }[]>;

interface ServedRoute {
  key: string;
  action: string | null;
  authenticated: boolean;
}

interface Request {
  path: Record<string, string>;
  query: Record<string, string>;
  body?: unknown;
}

/**
 * Rules the document states that the action checks in code after its params (each says why),
 * so the validator alone lets them through: for these the action itself is called, and must
 * refuse with 422 naming the field. Anything else the validator lets through is a disagreement.
 */
const CHECKED_BY_THE_ACTION: Record<string, string> = {
  // webhooks.url-policy.ts: the scheme is decided with the address the host resolves to.
  "webhooks.subscribe url pattern": "https only, checked with the resolved address",
};

/** `cursor` is opaque: only what the API wrote in a Link header is one, which no schema can say. */
/** Opaque parameters, and how to make a valid one: the lists' `cursor`, the events feed's `after`. */
const OPAQUE_PARAMETERS = new Map<string, (n: number) => string>([
  ["cursor", encodeCursor],
  ["after", (n) => encodeFeedCursor({ tx: String(n), producer: "orders", id: n })],
]);

let tb: TestBroker;
let document: Document;
let schemas: DocumentSchemas;
let served: ServedRoute[];
let operations: Operation[];

beforeAll(async () => {
  tb = await startTestBroker({
    services: ["gateway", "clients", "crm", "catalogue", "references", "orders", "webhooks"],
    database: { url: "pglite://memory", kind: "pglite", drop: async () => {} },
    // The default policy: only https:// subscriber URLs (the document says so).
    env: { WEBHOOK_ALLOW_INSECURE_TARGETS: "false" },
  });
  const gateway = tb.broker.getLocalService("gateway") as unknown as {
    server: Server;
    aliases: { method: string; fullPath: string; action?: unknown; route: { opts: { authentication?: boolean } } }[];
  };
  served = gateway.aliases.map((a) => ({
    key: `${a.method} ${a.fullPath.replace(/:(\w+)/g, "{$1}")}`,
    action: typeof a.action === "string" ? a.action : null,
    authenticated: a.route.opts.authentication === true,
  }));
  const { port } = gateway.server.address() as AddressInfo;
  document = (await (await fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`)).json()) as Document;
  schemas = new DocumentSchemas(document);
  operations = operationsOf(document);
}, 90_000);

afterAll(() => tb?.stop(), 30_000);

function registeredAction(
  broker: ServiceBroker,
  name: string,
): { scope?: string; params?: object; lineParams?: object } | null {
  const list = broker.registry.getActionList({}) as unknown as {
    name: string;
    action?: { scope?: string; params?: object; lineParams?: object };
  }[];
  return list.find((a) => a.name === name)?.action ?? null;
}

function apiOperations(): { op: Operation; action: string }[] {
  return operations.flatMap((op) => {
    const route = served.find((r) => r.key === op.key);
    return route?.action ? [{ op, action: route.action }] : [];
  });
}

/** What the document says of a request: empty when it allows it. */
function documentProblems(op: Operation, req: Request): string[] {
  const problems: string[] = [];
  if (op.body && req.body !== undefined)
    problems.push(...schemas.validate(op.body.schemaAt, req.body).map((e) => `body ${e}`));
  if (op.body?.required && req.body === undefined) problems.push("the body is required");
  for (const p of op.parameters.filter((q) => q.in !== "header")) {
    const raw = (p.in === "path" ? req.path : req.query)[p.name];
    if (raw === undefined) {
      if (p.required) problems.push(`${p.in} ${p.name} is required`);
    } else {
      problems.push(...parameterProblems(p, raw));
    }
  }
  const known = new Set(op.parameters.filter((p) => p.in === "query").map((p) => p.name));
  for (const name of Object.keys(req.query))
    if (!known.has(name)) problems.push(`query ${name} is not documented (unknown query parameters are refused)`);
  return problems;
}

/** A parameter's text against its schema, read the way the document's numbers are written: decimal. */
function parameterProblems(p: Parameter, raw: string): string[] {
  if (p.schema.type === "integer" || p.schema.type === "number") {
    if (!/^-?(0|[1-9]\d*)(\.\d+)?$/.test(raw)) return [`${p.in} ${p.name} is not a decimal number`];
    return schemas.validate(p.schemaAt, Number(raw)).map((e) => `${p.in} ${p.name} ${e}`);
  }
  return schemas.validate(p.schemaAt, raw).map((e) => `${p.in} ${p.name} ${e}`);
}

/** The action's params as the gateway hands them over (moleculer-web mergeParams: body, query, path). */
function actionParams(req: Request): Record<string, unknown> {
  const body =
    req.body !== null && typeof req.body === "object" && !Array.isArray(req.body)
      ? structuredClone<object>(req.body)
      : {};
  return { ...body, ...req.query, ...req.path };
}

const checkers = new Map<string, Checker>();

/** The gateway's one rule on bodies before any action (gateway.service.ts, authorize): a body is a JSON object. */
function gatewayRefusal(req: Request): string | null {
  const isObject = req.body !== null && typeof req.body === "object" && !Array.isArray(req.body);
  return req.body === undefined || isObject ? null : "gateway: the body must be a JSON object";
}

/**
 * What the gateway's body rule and the action's real validator say: null when they accept, else
 * why not (a path id outside the grammar throws its 404).
 */
async function validatorRefusal(action: string, req: Request): Promise<string | null> {
  const registered = registeredAction(tb.broker, action);
  const refused = gatewayRefusal(req);
  if (refused) return refused;
  // An NDJSON upload (POST /order_imports): its body is checked line by line against lineParams, the query against params.
  if (registered?.lineParams) {
    const line = await checked(`${action} line`, registered.lineParams, structuredClone<object>(req.body ?? {}));
    return line ?? checked(action, registered.params ?? {}, { ...req.query, ...req.path });
  }
  return checked(action, registered?.params ?? {}, actionParams(req));
}

async function checked(key: string, schema: object, value: object): Promise<string | null> {
  let check = checkers.get(key);
  if (!check) {
    check = tb.broker.validator!.compile(schema) as unknown as Checker;
    checkers.set(key, check);
  }
  try {
    const result = await check(value, { meta: {} });
    return result === true ? null : result.map((e) => `${e.field}: ${e.message}`).join("; ");
  } catch (err) {
    return (err as Error).message;
  }
}

/** Calls the action itself, as an admin, and returns its refusal (code and fields), or null when it succeeded. */
async function actionRefusal(action: string, req: Request): Promise<{ code: number; fields: string[] } | null> {
  try {
    await tb.call(action, actionParams(req), ADMIN);
    return null;
  } catch (err) {
    const e = err as {
      code?: number;
      data?: { errors?: { path?: string; field?: string }[] } | { path?: string; field?: string }[];
    };
    const list = Array.isArray(e.data) ? e.data : (e.data?.errors ?? []);
    return { code: e.code ?? 500, fields: list.map((f) => String(f.path ?? f.field)) };
  }
}

/** Requests the document allows: parameters and body drawn from their schemas. */
function validRequests(op: Operation): fc.Arbitrary<Request> {
  const group = (where: "path" | "query") => {
    const ps = op.parameters.filter((p) => p.in === where);
    const value = (p: Parameter) =>
      OPAQUE_PARAMETERS.has(p.name)
        ? fc.integer({ min: 1, max: 2 ** 31 - 1 }).map(OPAQUE_PARAMETERS.get(p.name)!)
        : valuesOf(document, p.schema).map(String);
    return fc.record(Object.fromEntries(ps.map((p) => [p.name, value(p)])), {
      requiredKeys: ps.filter((p) => p.required).map((p) => p.name),
    }) as fc.Arbitrary<Record<string, string>>;
  };
  const body = op.body
    ? valuesOf(document, op.body.schema).filter((b) => schemas.validate(op.body!.schemaAt, b).length === 0)
    : fc.constant(undefined);
  return fc
    .record({ path: group("path"), query: group("query"), body })
    .map((r) => (r.body === undefined ? { path: r.path, query: r.query } : r));
}

/** Each request that breaks one documented rule of `base`, named by where and which rule. */
function brokenRequests(op: Operation, base: Request): Broken<Request>[] {
  const out: Broken<Request>[] = [];
  if (op.body && base.body !== undefined) {
    const sample = (items: Record<string, unknown>) => fc.sample(valuesOf(document, items), { numRuns: 1, seed: 7 })[0];
    for (const b of bodyBreakers(document, op.body.schema, base.body, sample))
      out.push({ ...b, value: { ...base, body: b.value } });
  }
  for (const p of op.parameters.filter((q) => q.in === "path" || q.in === "query")) {
    const where = p.in as "path" | "query";
    for (const b of paramBreakers(document, p.schema))
      out.push({ path: p.name, rule: b.rule, value: { ...base, [where]: { ...base[where], [p.name]: b.value } } });
    if (where === "query" && p.required && p.name in base.query) {
      const { [p.name]: _dropped, ...rest } = base.query;
      out.push({ path: p.name, rule: "required", value: { ...base, query: rest } });
    }
  }
  out.push({
    path: "zzUnknown",
    rule: "unknown query parameter",
    value: { ...base, query: { ...base.query, zzUnknown: "1" } },
  });
  return out;
}

const SAMPLES_PER_OPERATION = 12;

describe("the OpenAPI document against the running gateway and services", () => {
  it("when the gateway's routes are listed, then they are exactly the documented operations", () => {
    expect(operations.map((o) => o.key).sort()).toEqual(served.map((r) => r.key).sort());
  });

  it("when an operation is documented, then its action is registered with the scope the document states, and it needs a key exactly when its route does", () => {
    const found = operations.map((op) => {
      const route = served.find((r) => r.key === op.key);
      const action = route?.action ? registeredAction(tb.broker, route.action) : null;
      const security = (document.paths as Record<string, Record<string, { security?: unknown[] }>>)[op.template][
        op.method.toLowerCase()
      ].security;
      return {
        op: op.key,
        action: route?.action ? { registered: action !== null, scope: action?.scope ?? null } : null,
        documentedOpen: Array.isArray(security) && security.length === 0,
        routeOpen: route ? !route.authenticated : null,
      };
    });
    const expected = operations.map((op, i) => ({
      op: op.key,
      action: found[i].action ? { registered: true, scope: op.scope } : null,
      documentedOpen: found[i].routeOpen,
      routeOpen: found[i].routeOpen,
    }));
    expect(found).toEqual(expected);
  });

  it("when requests are drawn from the document's schemas, then every action's validator accepts them", async () => {
    for (const { op, action } of apiOperations()) {
      await fc.assert(
        fc.asyncProperty(validRequests(op), async (req) => {
          expect({ op: op.key, document: documentProblems(op, req) }).toEqual({ op: op.key, document: [] });
          expect({ op: op.key, req, validator: await validatorRefusal(action, req) }).toEqual({
            op: op.key,
            req,
            validator: null,
          });
        }),
        { numRuns: 40 },
      );
    }
  });

  it("when a request breaks one documented rule, then the server refuses it, and every documented field is broken at least once", async () => {
    const disagreements: string[] = [];
    const unbroken: string[] = [];
    for (const { op, action } of apiOperations()) {
      const bases = fc.sample(validRequests(op), { numRuns: SAMPLES_PER_OPERATION, seed: 42 });
      const brokenPaths = new Set<string>();
      for (const base of bases) {
        for (const broken of brokenRequests(op, base)) {
          const what = `${op.key} ${broken.path || "(body)"} ${broken.rule}`;
          brokenPaths.add(broken.path);
          if (documentProblems(op, broken.value).length === 0) {
            disagreements.push(`${what}: the document itself allows ${JSON.stringify(broken.value)}`);
            continue;
          }
          if ((await validatorRefusal(action, broken.value)) !== null) continue;
          const exception = CHECKED_BY_THE_ACTION[`${action} ${broken.path} ${broken.rule}`];
          const refusal = exception ? await actionRefusal(action, broken.value) : null;
          if (refusal?.code === 422 && refusal.fields.includes(broken.path)) continue;
          disagreements.push(
            `${what}: accepted ${JSON.stringify(broken.value).slice(0, 300)}${refusal ? ` (action: ${JSON.stringify(refusal)})` : ""}`,
          );
        }
      }
      const documented = op.body ? fieldPaths(document, op.body.schema).filter((p) => p !== "") : [];
      for (const p of documented) if (!brokenPaths.has(p)) unbroken.push(`${op.key} ${p}`);
    }
    expect(disagreements).toEqual([]);
    expect(unbroken).toEqual([]);
  }, 120_000);

  it("when the validator refuses a request, then the document refuses it too", async () => {
    const hostile = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom(
        "",
        " ",
        " x ",
        "0",
        "-1",
        "01",
        "1e3",
        "0x10",
        "1.5",
        "true",
        "null",
        0,
        -1,
        1.0005,
        2 ** 31,
        2 ** 53,
        null,
        [],
        {},
      ),
      fc.string({ maxLength: 300 }),
      fc.double(),
    );
    let refusals = 0;
    for (const { op, action } of apiOperations()) {
      await fc.assert(
        fc.asyncProperty(
          validRequests(op),
          fc.nat(),
          hostile,
          fc.string({ minLength: 1, maxLength: 8 }),
          async (base, pick, value, text) => {
            const req = perturb(op, base, pick, value, text);
            const refusal = await validatorRefusal(action, req);
            if (refusal === null || OPAQUE_PARAMETERS.has(refusal.split(":")[0])) return;
            refusals++;
            expect({ op: op.key, req, refusal, document: documentProblems(op, req).length > 0 }).toEqual({
              op: op.key,
              req,
              refusal,
              document: true,
            });
          },
        ),
        { numRuns: 60 },
      );
    }
    // The sample is not empty: most perturbations are refused.
    expect(refusals).toBeGreaterThan(apiOperations().length * 10);
  }, 120_000);
});

/** One place of the request changed: a body field (or the body) replaced, dropped or joined, or a parameter's text. */
function perturb(op: Operation, base: Request, pick: number, value: unknown, text: string): Request {
  const params = op.parameters.filter((p) => p.in === "path" || p.in === "query");
  const places = jsonPlaces(base.body);
  const choice = pick % (places.length + params.length + 1);
  if (choice < places.length) return { ...base, body: places[choice](pick % 3 === 0 ? undefined : value) };
  if (choice < places.length + params.length) {
    const p = params[choice - places.length];
    const where = p.in as "path" | "query";
    return {
      ...base,
      [where]: { ...base[where], [p.name]: typeof value === "string" ? value : (JSON.stringify(value) ?? text) },
    };
  }
  return { ...base, query: { ...base.query, [text]: "1" } };
}

/** Setters for every place inside a JSON value, each returning a changed copy (undefined drops the key). */
function jsonPlaces(value: unknown): ((v: unknown) => unknown)[] {
  if (value === null || typeof value !== "object") return [];
  const places: ((v: unknown) => unknown)[] = [(v) => v];
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      for (const inner of jsonPlaces(item).concat(
        item !== null && typeof item === "object" ? [] : [(v: unknown) => v],
      )) {
        places.push((v) =>
          value.map((x, j) => (j === i ? inner(v) : structuredClone(x))).filter((x) => x !== undefined),
        );
      }
    });
    return places;
  }
  const obj = value as Record<string, unknown>;
  for (const [key, item] of Object.entries(obj)) {
    const inner = item !== null && typeof item === "object" ? jsonPlaces(item) : [(v: unknown) => v];
    for (const set of inner) places.push((v) => withKey(obj, key, set(v)));
  }
  places.push((v) => withKey(obj, "zzExtra", v === undefined ? 1 : v));
  return places;
}

function withKey(obj: Record<string, unknown>, key: string, v: unknown): Record<string, unknown> {
  const copy = structuredClone(obj);
  if (v === undefined) delete copy[key];
  else copy[key] = v;
  return copy;
}
