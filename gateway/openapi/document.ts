/**
 * The OpenAPI 3.1 document of /api/v1, generated from the route table (gateway/routes.ts), the
 * actions' own fastest-validator params (converted, never re-typed), the representation schemas
 * next to each service, and the table of success answers (outcomes.ts). The services come in as
 * an argument (service-description.ts): the composition root says which exist.
 */
import { API_PREFIX, ROUTES, type Route } from "../routes";
import { actionLookup, type ActionDefinition, type ActionLookup } from "./actions";
import {
  componentSchemas,
  ERROR_RESPONSES,
  HEADERS,
  PARAMETERS,
  pathParameter,
  ref,
  responseComponents,
  type ErrorStatus,
} from "./components";
import { convertParams, type JsonSchema } from "./fastest-to-json-schema";
import { OUTCOMES, type Outcome, type Success } from "./outcomes";
import { product } from "../../shared/product";
import { publicProbePaths } from "../probe-route";
import { withMethodOperations } from "./method-operations";
import { OPERATIONS_TAG, operationsPaths } from "./operations-paths";
import { rateLimitHeaderComponents, rateLimitHeaders } from "./rate-limit-headers";
import type { ServiceDescription } from "./service-description";
import { webhookOperations } from "./webhooks";
import { VERSION_HEADERS, VERSION_PARAMETERS, versionedParts, versionResponseComponents } from "./versions";

export const OPENAPI_PATH = `${API_PREFIX}/openapi.json`;

export type OpenApiDocument = Record<string, unknown> & {
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, unknown>>;
};
export type Operation = Record<string, unknown>;

const WITH_BODY = new Set<Route["method"]>(["POST", "PUT", "PATCH"]);

const TAGS: Record<string, { name: string; description: string }> = {
  orders: { name: "Orders", description: "Sales orders: intake, reading, validation and cancellation." },
  crm: { name: "CRM", description: "Customers and their contacts (scope `crm`; created by admins)." },
  catalogue: {
    name: "Catalogue",
    description: "Products, taxes and packagings (scope `catalogue`; created by admins).",
  },
  references: {
    name: "Partner references",
    description: "A partner's own references to contacts and packagings (scope `partner`).",
  },
  webhooks: { name: "Webhooks", description: "Subscriptions to events, and their deliveries." },
  clients: { name: "API clients", description: "API clients and their keys (scope `admin`)." },
};

const DESCRIPTION = `Order intake, reference lookup and webhooks.

**Authentication**: every call under \`/api/v1\` carries \`Authorization: Bearer <api key>\`. A missing, unknown or revoked key is 401 with \`WWW-Authenticate: Bearer\`; a key without the scope an operation needs is 403. The operations under the tag \`operations\` (\`/healthz\`, \`/readyz\`, \`/docs\`, this document) need no key and are not rate limited. Prometheus metrics (\`/metrics\`) are on the operators' probe port (\`HEALTH_PORT\`), and listed here only where \`METRICS_ON_PUBLIC_PORT\` puts them on this port too.

**Errors** are RFC 9457 problem documents (\`application/problem+json\`). Invalid input is 422 and names each bad field in \`errors[].path\`; unknown body fields are refused, and so are **unknown query parameters** (422 naming each), on every operation.

**Bodies** (\`POST\`, \`PUT\`, \`PATCH\`) are JSON objects: \`Content-Type: application/json\` (or \`application/*+json\`, UTF-8), else 415 with \`Accept-Post: application/json\`; at most 1 MiB after \`Content-Encoding\` (gzip, deflate, br) is undone, else 413.

**Methods**: \`HEAD\` is answered wherever \`GET\` is, with the same status and headers and no body. \`OPTIONS\` on a known path answers 204 with \`Allow\` listing its methods, and nothing else; both are declared on every path. A known path with a method it does not have is **405** with \`Allow\` (a problem document): OpenAPI declares only the methods a path has, so that answer is said here and in each \`OPTIONS\` operation. Paths are case-sensitive; an unknown path is 404.

**Lists** answer a JSON array, oldest first (webhook deliveries: newest first with \`?order=desc\`). Page with \`?limit=\` (1–500, default 50) and the opaque \`?cursor=\`; the next page's URL is in the \`Link: <...>; rel="next"\` header. A page of webhook deliveries also stops before ~512 KiB of JSON (each delivery carries its body), so it may hold fewer than \`limit\`: follow \`Link\` until it is absent.

**Request ids**: send \`X-Request-Id\` (1–128 of \`A-Za-z0-9_.:@/+=-\`) or get a new one; any other value is 400 naming the header. Every answer of \`/api/v1\` carries \`X-Request-ID\`.

**Rate limits** are per client, counted for all gateway replicas together, and failed authentications are throttled per address and per key (a valid key is never refused for what others failed); over a limit, 429 with \`Retry-After\`. Every answer of an operation that needs a key declares \`RateLimit-Policy\` and \`RateLimit\`: the \`"default"\` policy (the client's own limit), \`"auth-failures"\` on a 401.

**Unavailable**: while the database is unreachable or a service is restarting, any operation may answer 503 with \`Retry-After\` (seconds); nothing was half-written, so retrying is safe (with the same \`Idempotency-Key\` for \`POST /api/v1/orders\` and the webhooks' test, redeliver and recover).`;

/** `/orders/:id` → `/api/v1/orders/{id}`, and the names of its path parameters. */
export function openApiPath(path: string): { path: string; names: string[] } {
  const names: string[] = [];
  const templated = path.replace(/:([A-Za-z_]\w*)/g, (_m, name: string) => {
    names.push(name);
    return `{${name}}`;
  });
  return { path: API_PREFIX + templated, names };
}

function operationId(action: string): string {
  return action.replace(/\.(\w)/, (_m, c: string) => c.toUpperCase());
}

interface RequestParts {
  parameters: Record<string, unknown>[];
  body: { schema: JsonSchema; required: boolean } | null;
}

const NO_FIELDS =
  "This operation takes no fields: send no body, or an empty JSON object. Anything in it is refused (422 naming the field).";

/**
 * Splits one action's converted params into path parameters, query parameters or a body. One
 * rule for every POST, PUT and PATCH, as the gateway serves them (gateway/body-parser.ts): the
 * body is a JSON object of the fields that are not in the path — none for a bare action such as
 * `POST /orders/{id}/validate`, which then takes no body or `{}` — and it is required exactly
 * when one of its fields is (or a rule of the whole body asks for one, `minProperties`).
 */
export function requestParts(route: Route, params: JsonSchema): RequestParts {
  const { type: _type, properties: _fields, required: _required, additionalProperties, ...bodyRules } = params;
  const properties = (params.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((params.required ?? []) as string[]);
  const { names: pathNames } = openApiPath(route.path);
  const parameters: Record<string, unknown>[] = pathNames.map((name) =>
    pathParameter(name, properties[name] ?? { type: "string" }),
  );
  const rest = Object.keys(properties).filter((name) => !pathNames.includes(name));
  if (!WITH_BODY.has(route.method)) {
    for (const name of rest)
      parameters.push({ name, in: "query", required: required.has(name), schema: properties[name] });
    return { parameters, body: null };
  }
  const bodyRequired = rest.filter((name) => required.has(name));
  const schema: JsonSchema = {
    type: "object",
    ...(rest.length === 0 ? { description: NO_FIELDS } : {}),
    properties: Object.fromEntries(rest.map((name) => [name, properties[name]])),
    ...(bodyRequired.length > 0 ? { required: bodyRequired } : {}),
    ...(additionalProperties !== undefined ? { additionalProperties } : {}),
    ...bodyRules,
  };
  return { parameters, body: { schema, required: bodyRequired.length > 0 || Number(bodyRules.minProperties) > 0 } };
}

function successResponse(
  success: Success,
  idempotent: boolean,
  versionHeaders: Record<string, unknown>,
  mediaType = "application/json",
): Record<string, unknown> {
  const headers: Record<string, unknown> = {
    "X-Request-ID": ref("headers", "RequestId"),
    ...rateLimitHeaders("checked"),
    ...(success.body ? versionHeaders : {}),
  };
  if (success.location) headers.Location = ref("headers", "Location");
  if (idempotent) headers["Idempotent-Replayed"] = ref("headers", "IdempotentReplayed");
  if (success.paged) headers.Link = ref("headers", "Link");
  if (!success.body) return { description: success.description, headers };
  const schema = success.array ? { type: "array", items: ref("schemas", success.body) } : ref("schemas", success.body);
  return { description: success.description, headers, content: { [mediaType]: { schema } } };
}

function errorStatuses(
  route: Route,
  action: ActionDefinition | null,
  outcome: Outcome | undefined,
  hasPathParams: boolean,
): ErrorStatus[] {
  const withBody = WITH_BODY.has(route.method);
  const statuses: ErrorStatus[] = [];
  // Every operation: a malformed X-Request-Id is 400 (a body that is not JSON too, where there is one).
  statuses.push("400", "401");
  if (action?.scope || outcome?.forbidden) statuses.push("403");
  if (hasPathParams) statuses.push("404");
  if (outcome?.conflict) statuses.push("409");
  if (withBody) statuses.push("413", "415");
  statuses.push("422", "429", "503", "5XX");
  return statuses;
}

function operation(route: Route, actionDefinition: ActionLookup): Operation {
  const action = actionDefinition(route.action);
  const outcome = OUTCOMES[route.action];
  const service = route.action.split(".")[0];
  const { parameters, body } = requestParts(route, convertParams(action?.params ?? {}));
  const versions = versionedParts(outcome?.versioned);
  const content = route.streamed
    ? { [route.streamed]: { schema: lineSchema(action) } }
    : body && { "application/json": { schema: body.schema } };
  const headerParams = [
    ref("parameters", "RequestId"),
    ...(outcome?.idempotencyKey ? [ref("parameters", "IdempotencyKey")] : []),
    ...versions.parameters,
  ];

  const responses: Record<string, unknown> = {};
  for (const success of outcome?.success ?? [])
    responses[String(success.status)] = successResponse(
      success,
      outcome?.idempotencyKey === true,
      versions.successHeaders,
      route.streams,
    );
  Object.assign(responses, versions.responses);
  for (const status of errorStatuses(
    route,
    action,
    outcome,
    parameters.some((p) => p.in === "path"),
  )) {
    const response = ref("responses", ERROR_RESPONSES[status].name);
    const reason =
      status === "409" ? outcome?.conflict : status === "403" && !action?.scope ? outcome?.forbidden : undefined;
    responses[status] = reason ? { ...response, description: reason } : response;
  }

  const access = action?.scope ? `Requires the \`${action.scope}\` scope.` : "Any authenticated client.";
  return {
    operationId: operationId(route.action),
    tags: [TAGS[service]?.name ?? service],
    summary: action?.summary ?? `${route.action} (not available in this build)`,
    description: access,
    ...(action?.scope ? { "x-required-scope": action.scope } : {}),
    parameters: [...parameters, ...headerParams],
    ...(content ? { requestBody: { required: route.streamed !== undefined || body!.required, content } } : {}),
    responses,
  };
}

/** The schema of one line of a streamed NDJSON body: the action's `lineParams`. */
function lineSchema(action: ActionDefinition | null): JsonSchema {
  return {
    ...convertParams(action?.lineParams ?? {}),
    description: "One JSON value per line (NDJSON); this schema is that of each line.",
  };
}

/** What of the serving gateway's settings the document states. */
export interface DocumentOptions {
  /** METRICS_ON_PUBLIC_PORT: off for the committed docs/openapi.json, as by default. */
  metricsOnPublicPort?: boolean;
}

export function buildOpenApiDocument(
  services: readonly ServiceDescription[],
  { metricsOnPublicPort = false }: DocumentOptions = {},
): OpenApiDocument {
  const actionDefinition = actionLookup(services);
  const paths: Record<string, Record<string, Operation>> = {};
  for (const route of ROUTES) {
    const { path } = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation(route, actionDefinition);
  }
  Object.assign(paths, operationsPaths(OPENAPI_PATH, publicProbePaths(metricsOnPublicPort)));
  const methods = withMethodOperations(paths, { ...responseComponents(), ...versionResponseComponents() });

  const usedTags = new Set(ROUTES.map((r) => r.action.split(".")[0]));
  return {
    openapi: "3.1.0",
    info: {
      title: "Order intake API",
      version: product().version,
      description: DESCRIPTION,
      // package.json says UNLICENSED and LICENSE reserves every right: no SPDX licence fits, so a
      // LicenseRef- identifier (SPDX's form for a licence of one's own) names it.
      license: { name: "Proprietary: all rights reserved (see LICENSE)", identifier: "LicenseRef-Proprietary" },
    },
    // The same document is served and committed (docs/openapi.json), so no deployment's host is
    // written in it: "/" is wherever it was fetched from, localhost is `npm start`'s.
    servers: [
      {
        url: "/",
        description: "The server this document was fetched from: production, or whichever environment served it.",
        "x-internal": false,
      },
      {
        url: "http://localhost:3000",
        description: "Local development: `npm start` on your own machine (plain HTTP, loopback only).",
        "x-internal": true,
      },
    ],
    tags: [
      ...Object.entries(TAGS)
        .filter(([service]) => usedTags.has(service))
        .map(([, tag]) => tag),
      OPERATIONS_TAG,
    ],
    security: [{ apiKey: [] }],
    paths: methods.paths,
    webhooks: webhookOperations(),
    components: {
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "API key",
          description:
            "`Authorization: Bearer <api key>`; keys are created by an admin (`POST /api/v1/clients`) or the CLI.",
        },
      },
      schemas: componentSchemas(services),
      headers: { ...HEADERS, ...VERSION_HEADERS, ...rateLimitHeaderComponents() },
      parameters: { ...PARAMETERS, ...VERSION_PARAMETERS },
      responses: methods.responses,
    },
  };
}
