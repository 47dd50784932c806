/**
 * The OpenAPI document: valid OpenAPI 3.1, complete against the route table, and built from the
 * actions' own params (no second copy of a request schema that could drift).
 */
import { actionDefinition } from "../../gateway/openapi/actions";
import { buildOpenApiDocument, openApiPath, type OpenApiDocument, type Operation } from "../../gateway/openapi/document";
import { convertParams, type JsonSchema } from "../../gateway/openapi/fastest-to-json-schema";
import { OUTCOMES } from "../../gateway/openapi/outcomes";
import { ROUTES, type Route } from "../../gateway/routes";
import { EVENTS } from "../../shared/events";
import { DocumentSchemas, dereference, pointer } from "../helpers/openapi-schemas";
import { validateOpenApiDocument } from "../helpers/openapi-validator";
import { readFileSync } from "node:fs";
import path from "node:path";

const document: OpenApiDocument = buildOpenApiDocument();

function operationOf(route: Route): Operation | undefined {
  return document.paths[openApiPath(route.path).path]?.[route.method.toLowerCase()];
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: JsonSchema;
}

function parametersOf(op: Operation): Parameter[] {
  return ((op.parameters ?? []) as Record<string, unknown>[]).map(
    (p) => (typeof p.$ref === "string" ? dereference(document, p.$ref.slice(1)).node : p) as unknown as Parameter,
  );
}

const routeName = (r: Route) => `${r.method} ${r.path} (${r.action})`;

describe("the OpenAPI document", () => {
  it("when validated with @seriousme/openapi-schema-validator, then it is a valid OpenAPI 3.1 document", async () => {
    const result = await validateOpenApiDocument(document);
    expect(result.errors).toEqual([]);
    expect(result).toMatchObject({ valid: true, version: "3.1" });
  });

  it("when generated, then info.version is the package version", () => {
    const { version } = JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as { version: string };
    expect(document.info).toMatchObject({ version });
  });

  it.each(ROUTES.map((r) => [routeName(r), r] as const))("when %s is in the route table, then the document has its operation", (_name, route) => {
    const op = operationOf(route);
    expect(op).toBeDefined();
    expect(op?.summary).toBe(actionDefinition(route.action)?.summary);
  });

  it.each(ROUTES.map((r) => [routeName(r), r] as const))("when %s is routed, then its service defines it as a published action with a summary, and its answers are known", (_name, route) => {
    const action = actionDefinition(route.action);
    expect(action).not.toBeNull();
    expect(action).toMatchObject({ visibility: "published", summary: expect.any(String) });
    expect(OUTCOMES[route.action]).toBeDefined();
  });

  it("when a route has parameters or a body, then each is the action's converted params schema, field for field", () => {
    for (const route of ROUTES) {
      const action = actionDefinition(route.action);
      if (!action) continue; // reported by the test above
      const converted = convertParams(action.params);
      const properties = converted.properties as Record<string, JsonSchema>;
      const required = new Set(converted.required as string[] | undefined);
      const op = operationOf(route) as Operation;
      const params = parametersOf(op).filter((p) => p.in === "path" || p.in === "query");
      const body = (op.requestBody as { content: Record<string, { schema: JsonSchema }> } | undefined)?.content["application/json"].schema;

      const documented: Record<string, JsonSchema> = {};
      for (const p of params) {
        documented[p.name] = p.schema;
        expect({ route: routeName(route), field: p.name, required: p.required }).toEqual({
          route: routeName(route), field: p.name, required: p.in === "path" ? true : required.has(p.name),
        });
      }
      if (body) {
        const bodyProps = body.properties as Record<string, JsonSchema>;
        Object.assign(documented, bodyProps);
        const bodyRequired = [...required].filter((name) => name in bodyProps);
        expect({ route: routeName(route), required: body.required ?? [] }).toEqual({ route: routeName(route), required: bodyRequired });
        expect({ route: routeName(route), strict: body.additionalProperties }).toEqual({ route: routeName(route), strict: converted.additionalProperties });
      }
      expect({ route: routeName(route), fields: documented }).toEqual({ route: routeName(route), fields: properties });
      if (["GET", "DELETE"].includes(route.method)) expect(body).toBeUndefined();
    }
  });

  it("when POST /orders is documented, then its body is required, it takes an Idempotency-Key and answers 201 with Location", () => {
    const op = document.paths["/api/v1/orders"].post as Record<string, any>;
    expect(op.requestBody.required).toBe(true);
    expect(op.parameters).toContainEqual({ $ref: "#/components/parameters/IdempotencyKey" });
    expect(op.responses["201"].headers.Location).toEqual({ $ref: "#/components/headers/Location" });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "403", "409", "413", "422", "429"]));
  });

  it("when a list is documented, then it answers an array and may carry a Link header", () => {
    const op = document.paths["/api/v1/packaging_references"].get as Record<string, any>;
    expect(op.responses["200"].content["application/json"].schema).toEqual({ type: "array", items: { $ref: "#/components/schemas/PackagingReference" } });
    expect(op.responses["200"].headers.Link).toBeDefined();
    expect(op.parameters.map((p: { name?: string }) => p.name)).toEqual(expect.arrayContaining(["limit", "cursor"]));
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
          for (const type of Object.keys((node.content ?? {}) as object)) {
            expect(() => schemas.validate(`${at}${pointer("content", type, "schema")}`, null)).not.toThrow();
          }
        }
      }
    }
  });

  it("when the webhooks are documented, then each event has its request with the delivery headers", () => {
    const webhooks = document.webhooks as Record<string, { post: Record<string, any> }>;
    expect(Object.keys(webhooks).sort()).toEqual([...EVENTS].sort());
    const validated = webhooks.sales_order_validated.post;
    expect(validated.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Order" });
    expect(validated.parameters.map((p: { name: string }) => p.name)).toEqual(
      ["X-WEBHOOK-EVENT", "X-WEBHOOK-KEY", "User-Agent", "webhook-id", "webhook-timestamp", "webhook-signature"],
    );
    expect(webhooks.contact_reference_created.post.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ContactReference" });
  });

  it("when an error is documented, then it is a problem document with X-Request-ID, and 401 says WWW-Authenticate, 429 Retry-After", () => {
    const responses = document.components.responses as Record<string, Record<string, any>>;
    for (const response of Object.values(responses)) {
      expect(response.content["application/problem+json"].schema).toEqual({ $ref: "#/components/schemas/Problem" });
      expect(response.headers["X-Request-ID"]).toBeDefined();
    }
    expect(responses.Unauthenticated.headers["WWW-Authenticate"]).toBeDefined();
    expect(responses.RateLimited.headers["Retry-After"]).toBeDefined();
  });
});
