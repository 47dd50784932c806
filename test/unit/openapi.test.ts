/**
 * The OpenAPI document: valid OpenAPI 3.1, complete against the route table, and built from the
 * actions' own params (no second copy of a request schema that could drift).
 */
import { actionLookup } from "../../gateway/openapi/actions";
import {
  buildOpenApiDocument,
  openApiPath,
  type OpenApiDocument,
  type Operation,
} from "../../gateway/openapi/document";
import { OUTCOMES } from "../../gateway/openapi/outcomes";
import { ROUTES, type Route } from "../../gateway/routes";
import { EVENTS, SUBSCRIPTION_EVENT_NAMES } from "../../shared/messaging/events";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";
import { DocumentSchemas, dereference, pointer } from "../helpers/openapi-schemas";
import { validateOpenApiDocument } from "../helpers/openapi-validator";
import { readFileSync } from "node:fs";
import path from "node:path";

// Built from the services as the composition root registers them for the gateway.
const document: OpenApiDocument = buildOpenApiDocument(SERVICE_DESCRIPTIONS);
const actionDefinition = actionLookup(SERVICE_DESCRIPTIONS);

function operationOf(route: Route): Operation | undefined {
  return document.paths[openApiPath(route.path).path]?.[route.method.toLowerCase()];
}

const routeName = (r: Route) => `${r.method} ${r.path} (${r.action})`;

/** What these tests read of an operation and a response (the builder types the document loosely). */
type DocumentedResponse = {
  description: string;
  headers: Record<string, unknown>;
  content: Record<string, { schema: unknown }>;
};
type DocumentedOperation = {
  requestBody: { required?: boolean; content: Record<string, { schema: unknown }> };
  parameters: { name?: string; $ref?: string }[];
  responses: Record<string, DocumentedResponse>;
};

describe("the OpenAPI document", () => {
  it("when validated with @seriousme/openapi-schema-validator, then it is a valid OpenAPI 3.1 document", async () => {
    const result = await validateOpenApiDocument(document);
    expect(result.errors).toEqual([]);
    expect(result).toMatchObject({ valid: true, version: "3.1" });
  });

  it("when generated, then info.version is the package version", () => {
    const { version } = JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as {
      version: string;
    };
    expect(document.info).toMatchObject({ version });
  });

  it.each(ROUTES.map((r) => [routeName(r), r] as const))(
    "when %s is routed, then its service defines it as a published action with a summary, and its answers are known",
    (_name, route) => {
      const action = actionDefinition(route.action);
      expect(action).not.toBeNull();
      expect(action).toMatchObject({ visibility: "published", summary: expect.any(String) });
      expect(OUTCOMES[route.action]).toBeDefined();
      expect(operationOf(route)?.summary).toBe(action?.summary);
    },
  );

  // What the document says of requests is compared with the running validators in
  // test/unit/openapi-agreement.test.ts; here only what no request can show.

  it("when the probes and the reference are documented, then they are under the tag operations, without security", () => {
    const open = ["/healthz", "/readyz", "/docs", "/docs/{asset}", "/api/v1/openapi.json"];
    // /metrics is on the probe port (HEALTH_PORT); the public port has it only with METRICS_ON_PUBLIC_PORT.
    expect(document.paths["/metrics"]).toBeUndefined();
    expect(
      buildOpenApiDocument(SERVICE_DESCRIPTIONS, { metricsOnPublicPort: true }).paths["/metrics"]?.get?.tags,
    ).toEqual(["operations"]);
    for (const path of open) {
      expect({ path, tags: document.paths[path]?.get?.tags, security: document.paths[path]?.get?.security }).toEqual({
        path,
        tags: ["operations"],
        security: [],
      });
    }
    expect((document.tags as { name: string }[]).map((t) => t.name)).toContain("operations");
    const readyz = document.paths["/readyz"].get.responses as Record<string, unknown>;
    expect(Object.keys(readyz).sort()).toEqual(["200", "400", "503"]);
  });

  it("when an /api/v1 operation is documented, then it may answer 503 with Retry-After, and one with a body 415 with Accept-Post", () => {
    const responses = document.components.responses as Record<string, DocumentedResponse>;
    expect(responses.Unavailable.headers["Retry-After"]).toEqual({ $ref: "#/components/headers/RetryAfter" });
    expect(responses.UnsupportedEncoding.headers["Accept-Post"]).toEqual({ $ref: "#/components/headers/AcceptPost" });
    for (const route of ROUTES) {
      const responses = operationOf(route)?.responses as Record<string, unknown>;
      expect({ route: routeName(route), unavailable: responses["503"] }).toEqual({
        route: routeName(route),
        unavailable: { $ref: "#/components/responses/Unavailable" },
      });
      const withBody = (operationOf(route) as Operation).requestBody !== undefined;
      expect({ route: routeName(route), "415": responses["415"] !== undefined }).toEqual({
        route: routeName(route),
        "415": withBody || ["POST", "PUT", "PATCH"].includes(route.method),
      });
    }
  });

  it("when the info describes the API, then it states the rules no operation can carry", () => {
    const description = (document.info as { description: string }).description;
    expect(description).toMatch(/unknown query parameters.*422/is);
    expect(description).toMatch(/OPTIONS.*204.*Allow/s);
    expect(description).toMatch(/HEAD.*GET/s);
    expect(description).toMatch(/405.*Allow/s);
    expect(description).toMatch(/503.*Retry-After/s);
    expect(description).toMatch(/X-Request-Id.*400/s);
    expect(description).toMatch(/512 KiB/);
    const deliveries = document.paths["/api/v1/webhooks/{id}/deliveries"].get.responses as Record<
      string,
      { description: string }
    >;
    expect(deliveries["200"].description).toMatch(/512 KiB/);
  });

  it("when POST /orders is documented, then its body is required, it takes an Idempotency-Key and answers 201 with Location and Idempotent-Replayed", () => {
    const op = document.paths["/api/v1/orders"].post as DocumentedOperation;
    expect(op.requestBody.required).toBe(true);
    expect(op.parameters).toContainEqual({ $ref: "#/components/parameters/IdempotencyKey" });
    expect(op.responses["201"].headers.Location).toEqual({ $ref: "#/components/headers/Location" });
    expect(op.responses["201"].headers["Idempotent-Replayed"]).toEqual({
      $ref: "#/components/headers/IdempotentReplayed",
    });
    expect(
      (document.paths["/api/v1/orders/{id}/validate"].post as DocumentedOperation).responses["200"].headers,
    ).not.toHaveProperty("Idempotent-Replayed");
    expect(Object.keys(op.responses)).toEqual(
      expect.arrayContaining(["201", "400", "401", "403", "409", "413", "422", "429"]),
    );
  });

  it("when a list is documented, then it answers an array and may carry a Link header", () => {
    const op = document.paths["/api/v1/packaging_references"].get as DocumentedOperation;
    expect(op.responses["200"].content["application/json"].schema).toEqual({
      type: "array",
      items: { $ref: "#/components/schemas/PackagingReference" },
    });
    expect(op.responses["200"].headers.Link).toBeDefined();
    expect(op.parameters.map((p) => p.name)).toEqual(expect.arrayContaining(["limit", "cursor"]));
  });

  it("when every schema of the document is compiled by Ajv (draft 2020-12, strict), then none is refused and every $ref resolves", () => {
    const schemas = new DocumentSchemas(document, { strict: true });
    for (const name of Object.keys(document.components.schemas)) {
      expect(() => schemas.validate(pointer("components", "schemas", name), {})).not.toThrow();
    }
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const status of Object.keys(op.responses as object)) {
          const { node, pointer: at } = dereference(document, pointer("paths", path, method, "responses", status));
          for (const type of Object.keys(node.content ?? {})) {
            expect(() => schemas.validate(`${at}${pointer("content", type, "schema")}`, null)).not.toThrow();
          }
        }
      }
    }
  });

  it("when the webhooks are documented, then each event has its request with the delivery headers", () => {
    const webhooks = document.webhooks as Record<string, { post: DocumentedOperation }>;
    expect(Object.keys(webhooks).sort()).toEqual([...EVENTS, ...SUBSCRIPTION_EVENT_NAMES].sort());
    const validated = webhooks.sales_order_validated.post;
    expect(validated.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Order" });
    expect(validated.parameters.map((p) => p.name)).toEqual([
      "X-WEBHOOK-EVENT",
      "X-WEBHOOK-KEY",
      "X-WEBHOOK-PREVIOUS-KEY",
      "User-Agent",
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature",
    ]);
    expect(webhooks.contact_reference_created.post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/ContactReference",
    });
  });

  it("when an error is documented, then it is a problem document with X-Request-ID, and 401 says WWW-Authenticate, 429 Retry-After", () => {
    const responses = document.components.responses as Record<string, DocumentedResponse>;
    // Besides the errors: OPTIONS' 204 (MethodsAllowed), a read's 304 (NotModified), and each error's bodiless twin for HEAD (<name>Head).
    const errors = Object.entries(responses).filter(
      ([name]) => name !== "MethodsAllowed" && name !== "NotModified" && !name.endsWith("Head"),
    );
    for (const [name, response] of errors) {
      expect(response.content["application/problem+json"].schema).toEqual({ $ref: "#/components/schemas/Problem" });
      expect(response.headers["X-Request-ID"]).toBeDefined();
      if (responses[`${name}Head`]) expect(responses[`${name}Head`]).toEqual({ ...response, content: undefined });
    }
    expect(responses.Unauthenticated.headers["WWW-Authenticate"]).toBeDefined();
    expect(responses.RateLimited.headers["Retry-After"]).toBeDefined();
  });
});
