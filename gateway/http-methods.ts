/**
 * HTTP method semantics the route table implies, answered before moleculer-web routes a request
 * (it knows only "this alias or nothing", so it would answer 404 to HEAD and to a wrong method,
 * and would run the GET action for an OPTIONS request):
 *
 * - OPTIONS on a known path: 204 with `Allow`, no resource data;
 * - HEAD on a path with a GET: the GET, whose body Node's response drops (it was created for a HEAD);
 * - a known path with another method: 405 with `Allow`.
 *
 * `Allow` is derived from gateway/routes.ts ROUTES (plus the GET-only probe, docs and portal paths), the
 * one table. Paths are matched case-sensitively, like the routes themselves.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { MethodNotAllowedError } from "../shared/errors";
import { PROBE_PATHS } from "../shared/observability/probes";
import { DOCS_PATH } from "./openapi/docs-routes";
import { OPENAPI_PATH } from "./openapi/document";
import { PORTAL_PATH } from "./portal-paths";
import { API_PREFIX, ROUTES } from "./routes";

const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** The paths outside the API table, all read-only. */
const GET_ONLY_PATHS = [
  ...PROBE_PATHS,
  OPENAPI_PATH,
  DOCS_PATH,
  `${DOCS_PATH}/:asset`,
  PORTAL_PATH,
  `${PORTAL_PATH}/:asset`,
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `/orders/:id` → a regex of that path, a parameter being one non-empty segment. */
function templateRegex(template: string): RegExp {
  return new RegExp(
    `^${template
      .split("/")
      .map((s) => (s.startsWith(":") ? "[^/]+" : escapeRegExp(s)))
      .join("/")}$`,
  );
}

/** How many parameters a template has: a path matching several templates is the one with fewest. */
const parameterCount = (template: string) => template.split("/").filter((s) => s.startsWith(":")).length;

const TABLE: { regex: RegExp; method: string; parameters: number }[] = [
  ...ROUTES.map((r) => ({
    regex: templateRegex(API_PREFIX + r.path),
    method: r.method,
    parameters: parameterCount(r.path),
  })),
  ...GET_ONLY_PATHS.map((p) => ({ regex: templateRegex(p), method: "GET", parameters: parameterCount(p) })),
];

/** The request's path as moleculer-web matches it: no query, no trailing slash. */
function pathOf(url: string): string {
  const path = url.split("?")[0];
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

/**
 * The methods a path answers (for `Allow`), or null when no route has that path. A path that
 * matches a concrete template and a templated one is the concrete one's, as OpenAPI matches
 * paths: `/webhooks/available` is not the webhook "available", so it has no DELETE.
 */
export function allowedMethods(path: string): string[] | null {
  const matching = TABLE.filter((r) => r.regex.test(path));
  const fewest = Math.min(...matching.map((r) => r.parameters));
  const methods = new Set(matching.filter((r) => r.parameters === fewest).map((r) => r.method));
  if (methods.size === 0) return null;
  if (methods.has("GET")) methods.add("HEAD");
  methods.add("OPTIONS");
  return METHOD_ORDER.filter((m) => methods.has(m));
}

/**
 * Answers OPTIONS, refuses a wrong method (throws MethodNotAllowedError) and turns HEAD into
 * GET. True when it answered; unknown paths are left to moleculer-web's 404.
 */
export function answerMethodSemantics(req: IncomingMessage, res: ServerResponse, requestId: string): boolean {
  const allowed = allowedMethods(pathOf(req.url ?? "/"));
  if (!allowed) return false;
  const method = req.method ?? "GET";
  if (method === "OPTIONS") {
    res.writeHead(204, { Allow: allowed.join(", "), "X-Request-ID": requestId });
    res.end();
    return true;
  }
  if (!allowed.includes(method)) throw new MethodNotAllowedError(method, allowed);
  if (method === "HEAD") answerHeadAsGet(req, res);
  return false;
}

/**
 * Runs the GET: Node's response was made for a HEAD and drops the body, but then also leaves out
 * the Content-Length it would compute for that body, which a HEAD must still announce.
 */
function answerHeadAsGet(req: IncomingMessage, res: ServerResponse): void {
  req.method = "GET";
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.end = ((...args: unknown[]) => {
    const [chunk] = args;
    if (!res.headersSent && !res.hasHeader("Content-Length") && (typeof chunk === "string" || Buffer.isBuffer(chunk))) {
      res.setHeader("Content-Length", Buffer.byteLength(chunk));
    }
    return end(...args);
  }) as ServerResponse["end"];
}
