/**
 * The HTTP layer under hostile use, in the embedded mode (one broker, no transporter: the body
 * reaches the actions as the same object, so prototype tricks would work if they got through):
 * every malformed request is a 4xx RFC 9457 problem naming what is wrong, and writes nothing.
 * Parser rules are checked with generated inputs (fast-check).
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import fc from "fast-check";
import { openDatabase } from "../../shared/database/db";
import { api, type ApiClient } from "../helpers/http";
import { createApiWorld, partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { startTestBroker, type TestBroker } from "../helpers/broker";

const ADMIN_KEY = "hostile-http-admin-key-0123456789";

let t: TestBroker;
let base: string;
let admin: ApiClient;
let world: ApiWorld;

beforeAll(async () => {
  t = await startTestBroker({
    services: ["gateway", "clients", "crm", "catalogue", "references", "orders"],
    env: { ADMIN_API_KEY: ADMIN_KEY },
  });
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  admin = api(base).as(ADMIN_KEY);
  world = await createApiWorld(admin);
}, 120_000);
afterAll(() => t?.stop());

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  problem: {
    type?: string;
    status?: number;
    errors?: { path: string; message: string }[];
    errorCount?: number;
    detail?: string;
  };
}

/** A raw exchange: these requests are exactly what the OpenAPI document does not describe. */
async function send(
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
  key: string | null = null,
): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined && !("content-type" in headers) ? { "content-type": "application/json" } : {}),
      ...headers,
    },
    body,
  });
  const text = await res.text();
  const isProblem = (res.headers.get("content-type") ?? "").startsWith("application/problem+json");
  return { status: res.status, headers: res.headers, text, problem: isProblem ? JSON.parse(text) : {} };
}

const asPartner = (method: string, path: string, body?: string | Buffer, headers?: Record<string, string>) =>
  send(method, path, body, headers, world.partnerKey);
const asAdmin = (method: string, path: string, body?: string | Buffer, headers?: Record<string, string>) =>
  send(method, path, body, headers, ADMIN_KEY);

/** Rows a refused order or client could have left behind. */
async function rowCounts(): Promise<Record<string, number>> {
  const db = openDatabase(t.database.url);
  const counts: Record<string, number> = {};
  for (const table of [
    "orders.orders",
    "orders.order_items",
    "references.contact_references",
    "crm.contacts",
    "crm.customers",
    "clients.clients",
  ]) {
    counts[table] = Number((await db(table).count({ n: "*" }))[0].n);
  }
  return counts;
}

function expectProblem(a: Answer, status: number): void {
  expect({ status: a.status, type: a.headers.get("content-type")?.split(";")[0] }).toEqual({
    status,
    type: "application/problem+json",
  });
  expect(a.problem.status).toBe(status);
}

const paths = (a: Answer) => (a.problem.errors ?? []).map((e) => e.path);

describe("prototype keys", () => {
  it("when an order's contact and items stand only inside __proto__, then it is 422 naming __proto__ and no order is made", async () => {
    const before = await rowCounts();
    const { contact, items, ...rest } = partnerOrderBody(world);
    const smuggled = `${JSON.stringify(rest).slice(0, -1)},"__proto__":${JSON.stringify({ contact, items })}}`;

    const a = await asPartner("POST", "/api/v1/orders", smuggled);

    expectProblem(a, 422);
    expect(paths(a)).toContain("__proto__");
    expect(await rowCounts()).toEqual(before);
  });

  it("when a new client's scopes stand only inside __proto__, then it is 422 and no client is made", async () => {
    const before = await rowCounts();
    const a = await asAdmin(
      "POST",
      "/api/v1/clients",
      '{"name":"smuggler","kind":"partner","__proto__":{"scopes":["admin"]}}',
    );
    expectProblem(a, 422);
    expect(paths(a)).toEqual(["__proto__"]);
    expect(await rowCounts()).toEqual(before);
  });

  it("when __proto__, constructor or prototype is put at any depth of an order, then it is 422 naming that path and nothing is written", async () => {
    const before = await rowCounts();
    const forbidden = fc.constantFrom("__proto__", "constructor", "prototype");
    // Where to hang the nested junk: a new top-level field, inside the contact, an address or an item.
    const host = fc.constantFrom(
      { steps: [], path: "" },
      { steps: ["contact"], path: "contact" },
      { steps: ["deliveryAddress"], path: "deliveryAddress" },
      { steps: ["items", "0"], path: "items[0]" },
    );
    const middleKey = fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$/);
    const junk = fc.tuple(fc.array(middleKey, { maxLength: 5 }), forbidden, fc.jsonValue({ maxDepth: 2 }));

    await fc.assert(
      fc.asyncProperty(host, junk, async (at, [middle, key, value]) => {
        const body = JSON.parse(JSON.stringify(partnerOrderBody(world))) as Record<string, unknown>;
        // JSON text, so that the key is an own property exactly as a client would send it.
        let nested = `{${JSON.stringify(key)}:${JSON.stringify(value)}}`;
        for (const k of [...middle].reverse()) nested = `{${JSON.stringify(k)}:${nested}}`;
        let target: Record<string, unknown> = body;
        for (const step of at.steps) target = target[step] as Record<string, unknown>;
        target.__HOLE__ = 0;
        // `"__HOLE__":0` becomes `"m0":{..."__proto__":value}`.
        const text = JSON.stringify(body).replace('"__HOLE__":0', () => nested.slice(1, -1));

        const a = await asPartner("POST", "/api/v1/orders", text);

        expectProblem(a, 422);
        const expected = [at.path, ...middle, key].filter(Boolean).join(".");
        expect(paths(a)).toContain(expected);
      }),
      { numRuns: 60, seed: 20261123 },
    );
    expect(await rowCounts()).toEqual(before);
  });

  it("when a query string names a prototype key, then it is 422 naming the parameter (not silently dropped)", async () => {
    for (const query of ["__proto__[limit]=1", "constructor[x]=1", "prototype=1", "a[__proto__][b]=1"]) {
      const a = await asAdmin("GET", `/api/v1/orders?${query}`);
      expectProblem(a, 422);
      expect(paths(a)).toEqual([decodeURIComponent(query.split("=")[0])]);
    }
  });

  it("when a field comes both in the query string and in the body, then it is 422 naming it (the query cannot override the body)", async () => {
    const a = await asPartner("POST", `/api/v1/orders?externalReference=X`, JSON.stringify(partnerOrderBody(world)));
    expectProblem(a, 422);
    expect(paths(a)).toEqual(["externalReference"]);
  });
});

function isWellFormed(s: string): boolean {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

describe("strings the database cannot store as sent", () => {
  /** A string with U+0000 or one unpaired surrogate somewhere in it. */
  const unstorable = fc
    .tuple(
      fc.string({ maxLength: 10 }),
      fc.oneof(
        fc.constant("\u0000"),
        fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
      ),
      fc.string({ maxLength: 10 }),
    )
    // Only a surrogate that stays unpaired between the two halves (encodeURIComponent refuses those).
    .filter(([a, bad, b]) => bad === "\u0000" || !isWellFormed(`${a}${bad}${b}`))
    .map(([a, bad, b]) => `${a}${bad}${b}`);
  const field = fc.constantFrom(
    { path: "externalReference", set: (b: Record<string, unknown>, v: string) => ({ ...b, externalReference: v }) },
    {
      path: "deliveryAddress.street",
      set: (b: Record<string, unknown>, v: string) => ({
        ...b,
        deliveryAddress: { ...(b.deliveryAddress as object), street: v },
      }),
    },
    {
      path: "items[0].externalReferenceId",
      set: (b: Record<string, unknown>, v: string) => ({
        ...b,
        items: [{ externalReferenceId: v, orderedQuantity: 1 }],
      }),
    },
    {
      path: "contact.externalReferenceId",
      set: (b: Record<string, unknown>, v: string) => ({ ...b, contact: { externalReferenceId: v } }),
    },
  );

  it("when a string field holds NUL or a lone surrogate, then it is 422 naming the field and nothing is written", async () => {
    const before = await rowCounts();
    await fc.assert(
      fc.asyncProperty(field, unstorable, async (f, value) => {
        const a = await asPartner("POST", "/api/v1/orders", JSON.stringify(f.set(partnerOrderBody(world), value)));
        expectProblem(a, 422);
        expect(paths(a)).toEqual([f.path]);
      }),
      { numRuns: 60, seed: 20261124 },
    );
    expect(await rowCounts()).toEqual(before);
  });

  it("when a field's name holds NUL, then it is 422 naming it", async () => {
    const a = await asPartner("POST", "/api/v1/orders", JSON.stringify({ ...partnerOrderBody(world), "a\u0000b": 1 }));
    expectProblem(a, 422);
    expect(paths(a)).toEqual(["a\u0000b"]);
  });

  it("when the body's bytes are not UTF-8, then it is 400", async () => {
    const a = await asPartner("POST", "/api/v1/orders", Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]));
    expectProblem(a, 400);
  });
});

describe("bounds", () => {
  it("when JSON is nested deeper than 32 levels (up to a body of 1 MiB), then it is 422 naming where, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 33, max: 200_000 }), fc.boolean(), async (depth, arrays) => {
        const [open, close] = arrays ? ["[", "]"] : ['{"a":', "}"];
        const a = await asPartner(
          "POST",
          "/api/v1/orders",
          `{"externalReference":${open.repeat(depth)}1${close.repeat(depth)}}`,
        );
        expect([413, 422]).toContain(a.status);
        expect(a.problem.status).toBe(a.status);
      }),
      { numRuns: 15, seed: 20261125 },
    );
  });

  it("when an array has over 10,000 elements, then it is 422 naming it", async () => {
    const a = await asPartner(
      "POST",
      "/api/v1/orders",
      JSON.stringify({ ...partnerOrderBody(world), items: Array(10_001).fill(1) }),
    );
    expectProblem(a, 422);
    expect(paths(a)).toEqual(["items"]);
  });

  it.each([20_000, 900])(
    "when a body has %i unknown fields, then the answer lists at most 50 and counts them all",
    async (n) => {
      const body: Record<string, unknown> = partnerOrderBody(world);
      for (let i = 0; i < n; i++) body[`x${i}`] = 1;
      const a = await asPartner("POST", "/api/v1/orders", JSON.stringify(body));
      expectProblem(a, 422);
      expect(a.problem.errors!.length).toBeLessThanOrEqual(50);
      expect(a.text.length).toBeLessThan(8_000);
      if (n > 1000) expect(paths(a)).toEqual([""]);
      else expect(a.problem.errorCount).toBe(n);
    },
  );

  it.each([
    ["contact", { contact: null }],
    ["items", { items: null }],
    // A null element is named by its index (shared/http/params.ts, arrayOf).
    ["items[0]", { items: [null] }],
    ["invoicingAddress", { invoicingAddress: null }],
    ["deliveryAddress", { deliveryAddress: [] }],
  ])("when %s is null or of the wrong kind, then it is 422 naming it, not a 500", async (path, change) => {
    const a = await asPartner("POST", "/api/v1/orders", JSON.stringify({ ...partnerOrderBody(world), ...change }));
    expectProblem(a, 422);
    expect(paths(a)).toContain(path);
  });

  it("when a POST that needs a body comes without one, then it is 422 naming the body", async () => {
    const a = await asPartner("POST", "/api/v1/orders");
    expectProblem(a, 422);
    expect(paths(a)).toEqual([""]);
    expect(a.problem.detail).toMatch(/^body: A JSON body is required/);
  });
});

describe("media types and encodings", () => {
  const order = () => JSON.stringify(partnerOrderBody(world));

  it.each([
    ["text/plain"],
    ["application/x-www-form-urlencoded"],
    ["application/json; charset=latin1"],
    ["multipart/form-data; boundary=x"],
  ])("when the body is sent as %s, then it is 415 with Accept-Post: application/json", async (contentType) => {
    const a = await asPartner("POST", "/api/v1/orders", order(), { "content-type": contentType });
    expectProblem(a, 415);
    expect(a.headers.get("accept-post")).toBe("application/json");
  });

  it("when a body has no Content-Type, then it is 415", async () => {
    const res = await fetch(`${base}/api/v1/orders`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.partnerKey}` },
      body: new Blob([order()]),
    });
    expect(res.status).toBe(415);
  });

  it("when the Content-Encoding is unknown, then it is 415 naming the encodings accepted", async () => {
    const a = await asPartner("POST", "/api/v1/orders", order(), { "content-encoding": "compress" });
    expectProblem(a, 415);
    expect(a.headers.get("accept-encoding")).toMatch(/gzip/);
  });

  it("when a gzip body is corrupt, then it is 400; when it inflates past 1 MiB, then it is 413", async () => {
    expectProblem(
      await asPartner("POST", "/api/v1/orders", Buffer.from("not gzip at all"), { "content-encoding": "gzip" }),
      400,
    );
    const bomb = zlib.gzipSync(Buffer.from(`{"a":"${"x".repeat(2 * 1024 * 1024)}"}`));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expectProblem(await asPartner("POST", "/api/v1/orders", bomb, { "content-encoding": "gzip" }), 413);
  });

  it("when a valid order is sent gzipped as application/vnd.api+json, then it is created", async () => {
    const a = await asPartner("POST", "/api/v1/orders", zlib.gzipSync(order()), {
      "content-encoding": "gzip",
      "content-type": "application/vnd.api+json",
    });
    expect(a.status).toBe(201);
  });
});

describe("methods, paths and request ids", () => {
  it("when HEAD asks a GET route, then it has the GET's status and headers and no body", async () => {
    const get = await asAdmin("GET", "/api/v1/orders?limit=1");
    const head = await asAdmin("HEAD", "/api/v1/orders?limit=1");
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    expect((await send("HEAD", "/healthz")).status).toBe(200);
  });

  it("when OPTIONS asks a path, then it is 204 with Allow from the route table and no data", async () => {
    const a = await asAdmin("OPTIONS", "/api/v1/orders");
    expect(a.status).toBe(204);
    expect(a.text).toBe("");
    expect(a.headers.get("allow")).toBe("GET, HEAD, POST, OPTIONS");
    expect((await send("OPTIONS", "/api/v1/webhooks/12")).headers.get("allow")).toBe(
      "GET, HEAD, PATCH, DELETE, OPTIONS",
    );
  });

  it("when a known path is asked with another method, then it is 405 with Allow", async () => {
    const a = await asAdmin("DELETE", "/api/v1/orders");
    expectProblem(a, 405);
    expect(a.headers.get("allow")).toBe("GET, HEAD, POST, OPTIONS");
    expect((await asAdmin("PUT", "/api/v1/orders/1/validate", "{}")).headers.get("allow")).toBe("POST, OPTIONS");
  });

  it("when a path is unknown or differs only in case, then it is a 404 problem", async () => {
    for (const path of ["/api/v1/Orders", "/API/v1/orders", "/api/v1/nothing", "/nothing", "/HEALTHZ"]) {
      expectProblem(await asAdmin("GET", path), 404);
    }
  });

  it("when X-Request-Id breaks its pattern, then it is 400 naming the header; a good one is echoed", async () => {
    for (const bad of ["", "has space", "x".repeat(129), "é"]) {
      const a = await asAdmin("GET", "/api/v1/orders", undefined, { "x-request-id": bad });
      expectProblem(a, 400);
      expect(paths(a)).toEqual(["X-Request-Id"]);
      expect(a.headers.get("x-request-id")).not.toBe(bad);
    }
    const good = await asAdmin("GET", "/api/v1/orders", undefined, { "x-request-id": "trace-1:a/b=c" });
    expect(good.status).toBe(200);
    expect(good.headers.get("x-request-id")).toBe("trace-1:a/b=c");
  });
});
