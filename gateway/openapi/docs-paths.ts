/**
 * Where the browser reference lives and the files it is made of (name → media type): read by the
 * routes that serve them (docs-routes.ts) and by the document that lists them
 * (operations-paths.ts), without either importing the other.
 */
export const DOCS_PATH = "/docs";

export const DOCS_ASSET_TYPES = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
  "init.js": "text/javascript; charset=utf-8",
} as const;
export type DocsAsset = keyof typeof DOCS_ASSET_TYPES;
