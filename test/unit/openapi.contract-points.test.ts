/**
 * What the OpenAPI document declares besides each operation's own answers (issue 20), held to
 * what the gateway does: the methods of each path are those its `Allow` lists (HEAD and OPTIONS
 * declared), the bodies of bare actions follow one rule, the rate-limit fields are declared with
 * the policy each answer carries, every path parameter has an example, the licence is named.
 */
import { buildOpenApiDocument, type OpenApiDocument } from "../../gateway/openapi/document";
import { allowedMethods } from "../../gateway/http-methods";
import { requiresBody } from "../../gateway/body-parser";
import { actionLookup } from "../../gateway/openapi/actions";
import { API_PREFIX, ROUTES } from "../../gateway/routes";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";

/** What these tests read of the document (the builder types it loosely). */
interface Schema {
  type?: string;
  enum?: unknown[];
  minimum?: number;
  minProperties?: number;
  pattern?: string;
}
interface Parameter {
  name: string;
  in: string;
  example?: unknown;
  schema: Schema;
}
interface Response {
  $ref?: string;
  headers?: Record<string, { $ref?: string }>;
  content?: Record<string, { schema: Schema }>;
}
interface DocumentedOperation {
  security?: unknown[];
  parameters?: Parameter[];
  tags?: string[];
  description?: string;
  requestBody: { required: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, Response>;
}

const document: OpenApiDocument = buildOpenApiDocument(SERVICE_DESCRIPTIONS);
const paths = document.paths as unknown as Record<string, Record<string, DocumentedOperation>>;
const components = document.components as unknown as {
  responses: Record<string, Response>;
  headers: Record<string, { schema: Schema }>;
};
const METHODS = ["get", "head", "post", "put", "patch", "delete", "options"];
const operations = Object.entries(paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, method, op })),
);
/** `/api/v1/orders/{id}` → `/api/v1/orders/1`. */
const concrete = (template: string) => template.replace(/\{[^}]+\}/g, "1");
/** A response, its `$ref` to a response component followed. */
const resolved = (response: Response): Response =>
  response.$ref ? components.responses[response.$ref.slice(response.$ref.lastIndexOf("/") + 1)] : response;
const headersOf = (response: Response) => resolved(response).headers ?? {};

describe("the methods of each path", () => {
  it("when a path is documented, then its methods are exactly those the gateway lists in Allow", () => {
    for (const [path, item] of Object.entries(paths)) {
      const documented = Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((m) => m.toUpperCase())
        .sort();
      expect({ path, methods: documented }).toEqual({
        path,
        methods: [...(allowedMethods(concrete(path)) ?? [])].sort(),
      });
    }
  });

  it("when HEAD is documented, then it is its GET's operation with the same statuses and headers and no body", () => {
    for (const { path, op } of operations.filter((o) => o.method === "head")) {
      const get = paths[path].get;
      const same = (o: DocumentedOperation) => ({ path, security: o.security, parameters: o.parameters, tags: o.tags });
      expect(same(op)).toEqual(same(get));
      expect(Object.keys(op.responses)).toEqual(Object.keys(get.responses));
      for (const [status, response] of Object.entries(op.responses)) {
        expect({ path, status, content: resolved(response).content }).toEqual({ path, status, content: undefined });
        expect(headersOf(response)).toEqual(headersOf(get.responses[status]));
      }
    }
  });

  it("when OPTIONS is documented, then it needs no key, answers 204 with Allow, and says what a 405 is", () => {
    for (const { path, op } of operations.filter((o) => o.method === "options")) {
      expect({ path, security: op.security }).toEqual({ path, security: [] });
      expect(Object.keys(op.responses).sort()).toEqual(["204", "400"]);
      expect(headersOf(op.responses["204"]).Allow).toEqual({ $ref: "#/components/headers/Allow" });
      expect(op.description).toMatch(/405.*Allow/s);
    }
  });
});

describe("request bodies", () => {
  const actionDefinition = actionLookup(SERVICE_DESCRIPTIONS);

  it("when an operation takes a body (POST, PUT, PATCH), then one is declared, required exactly when the gateway requires one or a rule of the whole body asks for a field", () => {
    for (const route of ROUTES.filter((r) => ["POST", "PUT", "PATCH"].includes(r.method))) {
      const path = API_PREFIX + route.path.replace(/:(\w+)/g, "{$1}");
      const body = paths[path][route.method.toLowerCase()].requestBody;
      if (route.streamed) {
        // The body streams to the action: required, in its media type, one order per line.
        expect({ route: route.action, required: body.required, types: Object.keys(body.content) }).toEqual({
          route: route.action,
          required: true,
          types: [route.streamed],
        });
        continue;
      }
      const schema = body.content["application/json"].schema;
      const pathNames = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      const required =
        requiresBody(actionDefinition(route.action)?.params, pathNames) || (schema.minProperties ?? 0) > 0;
      expect({ route: route.action, required: body.required }).toEqual({ route: route.action, required });
    }
  });

  it("when an action takes no fields (validate, cancel, enable, test, redeliver, rotate_key), then its body is optional and may hold nothing", () => {
    for (const [path, method] of [
      ["/api/v1/orders/{id}/validate", "post"],
      ["/api/v1/orders/{id}/cancel", "post"],
      ["/api/v1/webhooks/{id}/enable", "post"],
      ["/api/v1/webhooks/{id}/test", "post"],
      ["/api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", "post"],
      ["/api/v1/clients/{id}/rotate_key", "post"],
    ]) {
      const body = paths[path][method].requestBody;
      expect({ path, required: body.required, schema: body.content["application/json"].schema }).toEqual({
        path,
        required: false,
        schema: { type: "object", description: expect.any(String), properties: {}, additionalProperties: false },
      });
    }
    expect(paths["/api/v1/webhooks/{id}/rotate"].post.requestBody.required).toBe(false);
    expect(paths["/api/v1/webhooks/{id}/recover"].post.requestBody.required).toBe(true);
    expect(paths["/api/v1/clients/{id}"].patch.requestBody).toMatchObject({
      required: true,
      content: { "application/json": { schema: { minProperties: 1 } } },
    });
  });
});

describe("the rate-limit fields", () => {
  const keyed = operations.filter((o) => o.op.security === undefined);

  it("when an operation needs a key, then each of its answers declares RateLimit-Policy and RateLimit with the policy it carries", () => {
    const expected = (status: string) =>
      status === "401" ? "AuthFailures" : status === "429" ? "Refusing" : "RateLimit";
    for (const { key, op } of keyed) {
      for (const [status, response] of Object.entries(op.responses)) {
        const headers = headersOf(response);
        expect({ key, status, policy: headers["RateLimit-Policy"]?.$ref }).toEqual({
          key,
          status,
          policy: expect.stringMatching(new RegExp(`/${expected(status)}Policy$`)),
        });
        expect(headers.RateLimit).toBeDefined();
      }
    }
  });

  it("when the fields are declared, then their patterns take what the gateway sends, each policy where it is sent", () => {
    const pattern = (name: string) => new RegExp(components.headers[name].schema.pattern ?? "");
    expect(pattern("RateLimitPolicy").test('"default";q=6000;w=60')).toBe(true);
    expect(pattern("RateLimit").test('"default";r=5817;t=41')).toBe(true);
    expect(pattern("RateLimit").test('"auth-failures";r=3;t=41')).toBe(false);
    expect(pattern("AuthFailuresPolicy").test('"auth-failures";q=20;w=60')).toBe(true);
    expect(pattern("AuthFailuresRateLimit").test('"auth-failures";r=0;t=1')).toBe(true);
    expect(pattern("RefusingRateLimit").test('"default";r=0;t=59')).toBe(true);
    expect(pattern("RefusingRateLimit").test('"auth-failures";r=0;t=59')).toBe(true);
  });

  it("when an operation needs no key (the operations tag, OPTIONS), then its answers declare no rate limit", () => {
    for (const { key, op } of operations.filter((o) => o.op.security !== undefined)) {
      for (const response of Object.values(op.responses))
        expect({ key, headers: Object.keys(headersOf(response)) }).not.toEqual({
          key,
          headers: expect.arrayContaining(["RateLimit"]),
        });
    }
  });
});

describe("path parameters and the licence", () => {
  it("when a path has a parameter, then every operation gives it an example that its schema takes", () => {
    for (const { key, op } of operations) {
      for (const p of (op.parameters ?? []).filter((q) => q.in === "path")) {
        expect({ key, name: p.name, example: p.example }).toEqual({ key, name: p.name, example: expect.anything() });
        if (p.schema.enum) expect(p.schema.enum).toContain(p.example);
        else expect(p.example).toBeGreaterThanOrEqual(p.schema.minimum ?? 1);
      }
    }
  });

  it("when the licence is read, then it has an SPDX identifier (swagger-parser refuses one with neither identifier nor url)", () => {
    expect((document.info as { license?: unknown }).license).toEqual({
      name: expect.stringMatching(/^Proprietary/),
      identifier: "LicenseRef-Proprietary",
    });
  });
});
