/**
 * The operations the gateway's method rules add to every path (gateway/http-methods.ts),
 * declared where OpenAPI 3.1 can declare them:
 *
 * - `HEAD` wherever `GET` is: the GET's operation, its answers without their bodies;
 * - `OPTIONS` on every path: 204 with `Allow`, before any key is read (no security, no rate limit).
 *
 * A method a path does not have is 405 with `Allow`. OpenAPI 3.1 declares only the operations a
 * path has, so that answer cannot be declared: it is said in each OPTIONS operation and in the
 * document's description instead.
 */
import { ref } from "./components";
import type { JsonSchema } from "./fastest-to-json-schema";

type Operation = Record<string, unknown>;
type PathItem = Record<string, Operation>;
type Responses = Record<string, Record<string, unknown>>;

const RESPONSE_REF = /^#\/components\/responses\/(\w+)$/;
/** The suffix of a response component's bodiless twin, for HEAD. */
const HEAD = "Head";

function withoutBody(response: Record<string, unknown>, bodilessComponents: Set<string>): Record<string, unknown> {
  const referenced = typeof response.$ref === "string" ? RESPONSE_REF.exec(response.$ref)?.[1] : undefined;
  if (referenced) {
    bodilessComponents.add(referenced);
    return ref("responses", referenced + HEAD);
  }
  const { content: _content, ...rest } = response;
  return rest;
}

/** The text of an operation's field (its `operationId`, `summary`, `description`), "" when it has none. */
const textOf = (op: Operation, field: string): string => (typeof op[field] === "string" ? op[field] : "");

function headOf(get: Operation, bodilessComponents: Set<string>): Operation {
  const responses = get.responses as Responses;
  const description = textOf(get, "description");
  return {
    ...get,
    operationId: `${textOf(get, "operationId")}${HEAD}`,
    summary: `The headers of: ${textOf(get, "summary")}`,
    description: `${description ? `${description} ` : ""}The same status and headers as \`GET\`, and no body.`,
    responses: Object.fromEntries(
      Object.entries(responses).map(([status, r]) => [status, withoutBody(r, bodilessComponents)]),
    ),
  };
}

/** `/api/v1/orders/{id}/validate` → `optionsOrdersByIdValidate`. */
function optionsOperationId(path: string): string {
  const words = path
    .split("/")
    .filter((s) => s && s !== "api" && !/^v\d+$/.test(s))
    .map((s) => (s.startsWith("{") ? `by_${s.slice(1, -1)}` : s))
    .flatMap((s) => s.split(/[_.-]/))
    .filter(Boolean);
  return ["options", ...words].map((w, i) => (i === 0 ? w : w[0].toUpperCase() + w.slice(1))).join("");
}

function optionsOf(path: string, item: PathItem): Operation {
  const first = Object.values(item)[0];
  const pathParameters = ((first.parameters ?? []) as JsonSchema[]).filter((p) => p.in === "path");
  return {
    operationId: optionsOperationId(path),
    tags: first.tags,
    summary: "The methods this path answers.",
    description:
      "`204` with `Allow` listing them, before any key is read: no API key needed, no rate limit, nothing else done. " +
      "A method not in `Allow` is answered `405` with the same `Allow` (a problem document); OpenAPI declares only " +
      "the methods a path has, so that answer is said here rather than declared.",
    security: [],
    parameters: [...pathParameters, ref("parameters", "RequestId")],
    responses: { "204": ref("responses", "MethodsAllowed"), "400": ref("responses", "RequestIdRefused") },
  };
}

/**
 * Adds HEAD and OPTIONS to every path, and to `responses` the bodiless twins (`<name>Head`) of the
 * response components a HEAD operation refers to.
 */
export function withMethodOperations(
  paths: Record<string, PathItem>,
  responses: Record<string, unknown>,
): { paths: Record<string, PathItem>; responses: Record<string, unknown> } {
  const bodilessComponents = new Set<string>();
  const out: Record<string, PathItem> = {};
  for (const [path, item] of Object.entries(paths)) {
    out[path] = {
      ...item,
      ...(item.get ? { head: headOf(item.get, bodilessComponents) } : {}),
      options: optionsOf(path, item),
    };
  }
  const twins = [...bodilessComponents].sort().map((name): [string, Record<string, unknown>] => {
    const { content: _content, ...rest } = responses[name] as Record<string, unknown>;
    return [name + HEAD, rest];
  });
  return { paths: out, responses: { ...responses, ...Object.fromEntries(twins) } };
}
