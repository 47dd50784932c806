/**
 * The moleculer-web route of the subscriber portal: `GET /portal` (the page) and
 * `GET /portal/{asset}` (its script and style), plain files of gateway/portal/ shipped with the
 * project (the build copies them next to this module). No authentication here: the page
 * exchanges a sign-in link's token (in its URL fragment) for a portal session, or asks for an API
 * key where PORTAL_KEY_SIGN_IN allows it, and calls the public /api/v1 like any client.
 */
import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import path from "node:path";
import type { ApiRouteSchema, GatewayResponse, IncomingRequest } from "moleculer-web";
import type { Config } from "../shared/config/config";
import { NotFoundError } from "../shared/errors";
import { PORTAL_ASSET_TYPES, PORTAL_PATH } from "./portal-paths";

type AliasHandler = (req: IncomingRequest, res: GatewayResponse, next?: (err?: unknown) => void) => void;

const PORTAL_DIR = path.join(__dirname, "portal");

/**
 * The page handles a session token or an API key: nothing runs but our own script, nothing is
 * loaded from elsewhere, no form is ever submitted (the key stays out of URLs), no frame may
 * embed it but the origins PORTAL_FRAME_ANCESTORS names (clickjacking), and Trusted Types make
 * any HTML-string sink (innerHTML) throw, so API data can only become text.
 */
const contentSecurityPolicy = (frameAncestors: string[]) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors.length > 0 ? frameAncestors.join(" ") : "'none'"}`,
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join("; ");

const COMMON_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  // The page and its script change together on an upgrade: revalidate rather than mix versions.
  "Cache-Control": "no-cache",
};

const pageHeaders = (frameAncestors: string[]) => ({
  ...COMMON_HEADERS,
  "Content-Type": "text/html; charset=utf-8",
  "Content-Security-Policy": contentSecurityPolicy(frameAncestors),
  // The link's token is in the fragment, which is never sent; no referrer either way.
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
});

/** What the page is told of the settings, as attributes of its <html> element (no inline script). */
const KEY_SIGN_IN_MARK = 'data-key-sign-in="on"';

const loaded = new Map<string, Buffer>();

/** Read once, on first use: a gateway without the portal's files still serves the API. */
function file(name: string): Buffer {
  let body = loaded.get(name);
  if (body === undefined) {
    body = readFileSync(path.join(PORTAL_DIR, name));
    loaded.set(name, body);
  }
  return body;
}

function send(res: ServerResponse, headers: Record<string, string>, body: Buffer): void {
  res.writeHead(200, { ...headers, "Content-Length": String(body.length) });
  res.end(body);
}

function servePage(settings: PortalSettings): AliasHandler {
  const headers = pageHeaders(settings.frameAncestors);
  let page: Buffer | undefined;
  return (_req, res) => {
    page ??= settings.keySignIn
      ? file("portal.html")
      : Buffer.from(file("portal.html").toString("utf8").replace(KEY_SIGN_IN_MARK, 'data-key-sign-in="off"'));
    send(res, headers, page);
  };
}

const serveAsset: AliasHandler = (req, res, next) => {
  const requested = (req.$params as { asset?: unknown } | undefined)?.asset;
  const name = typeof requested === "string" ? requested : "";
  if (!Object.hasOwn(PORTAL_ASSET_TYPES, name)) return next?.(new NotFoundError("file", name));
  send(
    res,
    { ...COMMON_HEADERS, "Content-Type": PORTAL_ASSET_TYPES[name as keyof typeof PORTAL_ASSET_TYPES] },
    file(name),
  );
};

export type PortalSettings = Pick<Config["portal"], "keySignIn" | "frameAncestors">;

/** One route, matching its own paths only, without authentication or body parsing. */
export function portalRoutes(settings: PortalSettings): ApiRouteSchema[] {
  return [
    {
      name: "portal",
      path: PORTAL_PATH,
      aliases: { "GET /": servePage(settings), "GET /:asset": serveAsset },
      mappingPolicy: "restrict",
      autoAliases: false,
      authentication: false,
      authorization: false,
      bodyParsers: false,
    },
  ];
}
