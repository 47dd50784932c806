/**
 * The paths the gateway serves outside the route table, in the main document under the tag
 * "operations": the probes the public port answers (/healthz, /readyz, and /metrics only with
 * METRICS_ON_PUBLIC_PORT: gateway/probe-route.ts, shared/observability/probes.ts), the API reference
 * (/docs, its assets, /api/v1/openapi.json) and the subscriber portal (/portal, its assets).
 * None needs an API key (`security: []`) and none is rate limited. One document, so that "every
 * path the gateway answers is documented" is one check (test/unit/openapi-agreement.test.ts).
 */
import type { ProbePath } from "../../shared/observability/probes";
import { errorResponse, pathParameter, ref } from "./components";
import { PORTAL_ASSET_TYPES, PORTAL_PATH } from "../portal-paths";
import { DOCS_ASSET_TYPES, DOCS_PATH } from "./docs-paths";

export const OPERATIONS_TAG = {
  name: "operations",
  description: "Probes, metrics, this reference and the subscriber portal: no API key, no rate limit.",
};

type Operation = Record<string, unknown>;

const checkState = { type: "string", description: '"ok", or a short reason the check fails.' } as const;

const READINESS = {
  type: "object",
  required: ["status", "failing", "checks"],
  properties: {
    status: { enum: ["ok", "unavailable"] },
    failing: { type: "array", items: { type: "string" }, description: "The names of the checks that are not ok." },
    checks: {
      type: "object",
      additionalProperties: checkState,
      description:
        "`broker`, `transporter` (distributed), per service `<name>.database`, `<name>.migrations`, and per service with an outbox `<name>.publishing`, `<name>.outbox` (its events have not flowed for OUTBOX_STALLED_AFTER).",
    },
  },
  additionalProperties: false,
} as const;

const PROBES: Record<ProbePath, Operation> = {
  "/healthz": {
    operationId: "healthz",
    summary: "Liveness: the process answers.",
    description: "200 as long as the process runs, also while it shuts down (so nothing restarts a draining process).",
    responses: {
      "200": {
        description: "Alive.",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["status"],
              properties: { status: { const: "ok" } },
              additionalProperties: false,
            },
          },
        },
      },
    },
  },
  "/readyz": {
    operationId: "readyz",
    summary:
      "Readiness: the broker, the transporter, each service's database and migrations, and the flow of its events.",
    description:
      "Each check is bounded in time, so an unreachable database answers 503 quickly. While the process shuts down it is 503.",
    responses: {
      "200": { description: "Ready: every check is ok.", content: { "application/json": { schema: READINESS } } },
      "503": {
        description: "Not ready: `failing` names the checks that are not ok.",
        content: { "application/json": { schema: READINESS } },
      },
    },
  },
  "/metrics": {
    operationId: "metrics",
    summary: "Prometheus metrics of this process.",
    description:
      "Listed only where `METRICS_ON_PUBLIC_PORT=true` serves it on this port; by default it is on `HEALTH_PORT`.",
    responses: {
      "200": {
        description: "The Prometheus text exposition format.",
        content: { "text/plain": { schema: { type: "string" } } },
      },
    },
  },
};

function docsOperations(): Record<string, Record<string, Operation>> {
  return {
    [DOCS_PATH]: {
      get: {
        operationId: "docsPage",
        summary: "This reference in the browser (Swagger UI, served from this gateway: no CDN).",
        description:
          "Swagger UI from the gateway's own `swagger-ui-dist` package, reading `/api/v1/openapi.json`; works offline.",
        responses: { "200": { description: "The page.", content: { "text/html": { schema: { type: "string" } } } } },
      },
    },
    [`${DOCS_PATH}/{asset}`]: {
      get: {
        operationId: "docsAsset",
        summary: "A file of the browser reference (script, style, icon).",
        description: "Only the files the page uses are served; any other name is 404.",
        parameters: [pathParameter("asset", { enum: Object.keys(DOCS_ASSET_TYPES) })],
        responses: {
          "200": {
            description: "The file.",
            content: fileContent(DOCS_ASSET_TYPES),
          },
          "404": errorResponse("404", { rateLimited: false }),
        },
      },
    },
  };
}

/** The media types of a set of files, each with a string schema. */
function fileContent(types: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(
    [...new Set(Object.values(types).map((type) => type.split(";")[0]))].map((type) => [
      type,
      { schema: { type: "string" } },
    ]),
  );
}

function portalOperations(): Record<string, Record<string, Operation>> {
  return {
    [PORTAL_PATH]: {
      get: {
        operationId: "portalPage",
        summary:
          "The subscriber portal: a page where a client signs in with its API key to see and manage its webhooks.",
        description:
          "It calls only this public API with the key typed into it, which stays in the page's memory. The page is served with a Content-Security-Policy allowing only its own script and style (Trusted Types required), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.",
        responses: { "200": { description: "The page.", content: { "text/html": { schema: { type: "string" } } } } },
      },
    },
    [`${PORTAL_PATH}/{asset}`]: {
      get: {
        operationId: "portalAsset",
        summary: "A file of the subscriber portal (script, style).",
        description: "Only the files the page uses are served; any other name is 404.",
        parameters: [pathParameter("asset", { enum: Object.keys(PORTAL_ASSET_TYPES) })],
        responses: {
          "200": { description: "The file.", content: fileContent(PORTAL_ASSET_TYPES) },
          "404": errorResponse("404", { rateLimited: false }),
        },
      },
    },
  };
}

function openApiOperation(): Operation {
  return {
    operationId: "openapiDocument",
    summary: "This OpenAPI document.",
    description:
      "Generated from the route table and the services' own parameter and representation schemas; `docs/openapi.json` is this document under the default settings.",
    responses: {
      "200": {
        description: "The OpenAPI 3.1 document of this API.",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["openapi", "info", "paths"],
              properties: {
                openapi: { type: "string", pattern: "^3\\.1\\." },
                info: { type: "object" },
                paths: { type: "object" },
              },
            },
          },
        },
      },
    },
  };
}

/** Every answer of the gateway carries the request id, these too (moleculer-web sets it before any handler). */
function withRequestId(responses: Record<string, Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(responses).map(([status, r]) => [
      status,
      r.$ref ? r : { ...r, headers: { "X-Request-ID": ref("headers", "RequestId"), ...(r.headers as object) } },
    ]),
  );
}

/** The paths of the operations tag, given the path the document itself is served at and the probes the port answers. */
export function operationsPaths(
  openApiPath: string,
  probePaths: readonly ProbePath[],
): Record<string, Record<string, Operation>> {
  const open = (op: Operation): Operation => ({
    ...op,
    tags: [OPERATIONS_TAG.name],
    security: [],
    // The X-Request-Id rule holds on every path of the gateway (gateway/request-id.ts), these too.
    responses: withRequestId({
      ...(op.responses as Record<string, Record<string, unknown>>),
      "400": ref("responses", "RequestIdRefused"),
    }),
  });
  const paths: Record<string, Record<string, Operation>> = {};
  for (const path of probePaths) paths[path] = { get: open(PROBES[path]) };
  for (const [path, item] of Object.entries({ ...docsOperations(), ...portalOperations() }))
    paths[path] = { get: open(item.get) };
  paths[openApiPath] = { get: open(openApiOperation()) };
  return paths;
}
