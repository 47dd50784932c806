/**
 * Where the subscriber portal lives and the files it is made of (name → media type): read by the
 * routes that serve them (portal-routes.ts), by the method table (http-methods.ts) and by the
 * document that lists them (openapi/operations-paths.ts), without any of them reading the files.
 */
export const PORTAL_PATH = "/portal";

/** The page itself is portal.html, served at PORTAL_PATH; these are its assets, under PORTAL_PATH/. */
export const PORTAL_ASSET_TYPES = {
  "portal.js": "text/javascript; charset=utf-8",
  "portal.css": "text/css; charset=utf-8",
} as const;
export type PortalAsset = keyof typeof PORTAL_ASSET_TYPES;
