/**
 * The moleculer-web routes of the API reference: `GET /api/v1/openapi.json` (the document) and
 * `GET /docs` (Swagger UI, from the swagger-ui-dist package, served from node_modules: no CDN).
 * No authentication: the reference is public, like the interface it documents.
 */
import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import path from "node:path";
import type { ApiRouteSchema, GatewayResponse, IncomingRequest } from "moleculer-web";
import { NotFoundError } from "../../shared/errors";
import { DOCS_ASSET_TYPES, DOCS_PATH, type DocsAsset } from "./docs-paths";
import { buildOpenApiDocument, OPENAPI_PATH, type DocumentOptions } from "./document";
import type { ServiceDescription } from "./service-description";

type AliasHandler = (req: IncomingRequest, res: GatewayResponse, next?: (err?: unknown) => void) => void;

export { DOCS_PATH } from "./docs-paths";

const SWAGGER_UI_DIR = path.dirname(require.resolve("swagger-ui-dist/package.json"));

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Order intake API reference</title>
  <link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
  <script src="${DOCS_PATH}/init.js"></script>
</body>
</html>
`;

/**
 * In a file of its own so that the page needs no inline script (the CSP forbids them).
 *
 * The page leaves out the OPTIONS operations (one per path: "no key, `Allow` lists the methods"),
 * which the document keeps for tools: Swagger UI 5.35 stops drawing the operation list once a
 * document has more than 142 path operations (with 143 it drew three and nothing after them, no
 * error; measured when the order imports brought ours to 145), and they tell a reader nothing
 * the path's other operations do not. test/e2e/docs-page.test.ts counts what the page lists.
 */
const INIT_SCRIPT = `const withoutOptions = (ops) => ops.filter((op) => op.get("method") !== "options");
window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(OPENAPI_PATH)},
  dom_id: "#swagger-ui",
  deepLinking: true,
  plugins: [() => ({
    statePlugins: { spec: { wrapSelectors: {
      taggedOperations: (taggedOperations) => (...args) =>
        taggedOperations(...args).map((tag) => tag.update("operations", withoutOptions)),
    } } },
  })],
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
});
`;

/** The only files served under /docs: Swagger UI's bundle, its style and icons, and our initialiser. */
const LOADERS: Record<DocsAsset, () => Buffer | string> = {
  "swagger-ui-bundle.js": () => readFileSync(path.join(SWAGGER_UI_DIR, "swagger-ui-bundle.js")),
  "swagger-ui.css": () => readFileSync(path.join(SWAGGER_UI_DIR, "swagger-ui.css")),
  "favicon-32x32.png": () => readFileSync(path.join(SWAGGER_UI_DIR, "favicon-32x32.png")),
  "favicon-16x16.png": () => readFileSync(path.join(SWAGGER_UI_DIR, "favicon-16x16.png")),
  "init.js": () => INIT_SCRIPT,
};
const ASSETS: Record<string, { type: string; load: () => Buffer | string }> = Object.fromEntries(
  (Object.keys(LOADERS) as DocsAsset[]).map((name) => [name, { type: DOCS_ASSET_TYPES[name], load: LOADERS[name] }]),
);
const loaded = new Map<string, Buffer | string>();

const PAGE_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  // Swagger UI sets inline styles and shows data: images; nothing else comes from anywhere but here.
  "Content-Security-Policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
};

function send(res: ServerResponse, headers: Record<string, string>, body: Buffer | string): void {
  res.writeHead(200, { ...headers, "Content-Length": String(Buffer.byteLength(body)) });
  res.end(body);
}

/** Serves the document of these services, built on the first request (it depends on code only). */
function documentServer(services: readonly ServiceDescription[], options: DocumentOptions): AliasHandler {
  let json: string | null = null;
  return (_req, res) => {
    json ??= JSON.stringify(buildOpenApiDocument(services, options));
    send(res, { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-cache" }, json);
  };
}

const servePage: AliasHandler = (_req, res) => {
  send(res, { ...PAGE_HEADERS, "Cache-Control": "no-cache" }, PAGE);
};

const serveAsset: AliasHandler = (req, res, next) => {
  const requested = (req.$params as { asset?: unknown } | undefined)?.asset;
  const name = typeof requested === "string" ? requested : "";
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return next?.(new NotFoundError("file", name));
  let body = loaded.get(name);
  if (body === undefined) {
    body = asset.load();
    loaded.set(name, body);
  }
  send(
    res,
    { "Content-Type": asset.type, "Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff" },
    body,
  );
};

/** Routes without authentication, each matching its own paths only (their order does not matter). */
/** `options`: what of this gateway's settings the document states (which probes its port answers). */
export function docsRoutes(services: readonly ServiceDescription[], options: DocumentOptions): ApiRouteSchema[] {
  const common = {
    mappingPolicy: "restrict" as const,
    autoAliases: false,
    authentication: false,
    authorization: false,
    bodyParsers: false as const,
  };
  return [
    {
      name: "openapi-document",
      path: OPENAPI_PATH,
      aliases: { "GET /": documentServer(services, options) },
      ...common,
    },
    { name: "docs", path: DOCS_PATH, aliases: { "GET /": servePage, "GET /:asset": serveAsset }, ...common },
  ];
}
