/**
 * The explicit route table of /api/v1: one line per endpoint, nothing routed implicitly.
 * The OpenAPI document is generated from this table and the actions' own param schemas.
 */
export interface Route {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  action: string;
  /** The body streams on to the action as it arrives, in this media type, instead of being parsed here (gateway/body-parser.ts). */
  streamed?: "application/x-ndjson";
  /** The answer is a stream in this media type rather than JSON. */
  streams?: "application/x-ndjson";
  /** The largest body the route reads, when not the gateway's BODY_LIMIT_BYTES (gateway/body-parser.ts). */
  bodyLimitBytes?: number;
}

/**
 * POST /orders/batch carries up to 500 orders: 1 MiB holds about 300 orders of a few items, so the
 * route reads up to 16 MiB (about 32 KiB an order). Beyond it the answer is 413.
 */
export const BATCH_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export { API_PREFIX } from "../shared/http/responses";

export const ROUTES: Route[] = [
  // Orders
  { method: "POST", path: "/orders", action: "orders.create" },
  { method: "POST", path: "/orders/batch", action: "orders.createBatch", bodyLimitBytes: BATCH_BODY_LIMIT_BYTES },
  { method: "GET", path: "/orders", action: "orders.list" },
  { method: "GET", path: "/orders/:id", action: "orders.get" },
  { method: "POST", path: "/orders/:id/validate", action: "orders.validate" },
  { method: "POST", path: "/orders/:id/cancel", action: "orders.cancel" },
  { method: "POST", path: "/order_imports", action: "orders.startImport", streamed: "application/x-ndjson" },
  { method: "GET", path: "/order_imports/:id", action: "orders.getImport" },
  {
    method: "GET",
    path: "/order_imports/:id/results",
    action: "orders.importResults",
    streams: "application/x-ndjson",
  },
  // CRM
  { method: "GET", path: "/contacts", action: "crm.listContacts" },
  { method: "POST", path: "/contacts", action: "crm.createContact" },
  { method: "GET", path: "/contacts/:id", action: "crm.getContact" },
  { method: "GET", path: "/customers", action: "crm.listCustomers" },
  { method: "POST", path: "/customers", action: "crm.createCustomer" },
  { method: "GET", path: "/customers/:id", action: "crm.getCustomer" },
  // Catalogue
  { method: "GET", path: "/packagings", action: "catalogue.listPackagings" },
  { method: "POST", path: "/packagings", action: "catalogue.createPackaging" },
  { method: "GET", path: "/packagings/:id", action: "catalogue.getPackaging" },
  { method: "GET", path: "/products", action: "catalogue.listProducts" },
  { method: "POST", path: "/products", action: "catalogue.createProduct" },
  { method: "GET", path: "/products/:id", action: "catalogue.getProduct" },
  // Partner references
  { method: "GET", path: "/contact_references", action: "references.listContactReferences" },
  { method: "POST", path: "/contact_references", action: "references.createContactReference" },
  { method: "GET", path: "/contact_references/:id", action: "references.getContactReference" },
  { method: "GET", path: "/packaging_references", action: "references.listPackagingReferences" },
  { method: "POST", path: "/packaging_references", action: "references.createPackagingReference" },
  { method: "GET", path: "/packaging_references/:id", action: "references.getPackagingReference" },
  // Webhooks
  { method: "GET", path: "/webhooks/available", action: "webhooks.available" },
  { method: "GET", path: "/webhooks/deliveries", action: "webhooks.searchDeliveries" },
  { method: "GET", path: "/webhooks/event_types", action: "webhooks.eventTypes" },
  { method: "PUT", path: "/webhooks", action: "webhooks.subscribe" },
  { method: "GET", path: "/webhooks", action: "webhooks.list" },
  { method: "GET", path: "/webhooks/:id", action: "webhooks.get" },
  { method: "PATCH", path: "/webhooks/:id", action: "webhooks.update" },
  { method: "DELETE", path: "/webhooks/:id", action: "webhooks.unsubscribe" },
  { method: "POST", path: "/webhooks/:id/rotate", action: "webhooks.rotate" },
  { method: "POST", path: "/webhooks/:id/enable", action: "webhooks.enable" },
  { method: "POST", path: "/webhooks/:id/disable", action: "webhooks.disable" },
  { method: "GET", path: "/webhooks/:id/stats", action: "webhooks.stats" },
  { method: "GET", path: "/webhooks/:id/deliveries", action: "webhooks.deliveries" },
  { method: "POST", path: "/webhooks/:id/deliveries/:deliveryId/redeliver", action: "webhooks.redeliver" },
  { method: "POST", path: "/webhooks/:id/test", action: "webhooks.sendTest" },
  { method: "POST", path: "/webhooks/:id/recover", action: "webhooks.recover" },
  { method: "GET", path: "/webhooks/:id/recoveries/:recoveryId", action: "webhooks.recovery" },
  // The events feed: what the client's webhooks carry, pulled
  { method: "GET", path: "/events", action: "webhooks.feed" },
  // Subscriber portal sign-in (docs/webhooks.md, "The portal")
  { method: "POST", path: "/portal_sessions", action: "clients.createPortalSession" },
  { method: "GET", path: "/portal_sessions", action: "clients.listPortalSessions" },
  { method: "POST", path: "/portal_sessions/exchange", action: "clients.exchangePortalLink" },
  { method: "DELETE", path: "/portal_sessions/:id", action: "clients.revokePortalSession" },
  // API clients (admin)
  { method: "POST", path: "/clients", action: "clients.create" },
  { method: "GET", path: "/clients", action: "clients.list" },
  { method: "GET", path: "/clients/:id", action: "clients.get" },
  { method: "PATCH", path: "/clients/:id", action: "clients.update" },
  { method: "DELETE", path: "/clients/:id", action: "clients.revoke" },
  { method: "POST", path: "/clients/:id/rotate_key", action: "clients.rotateKey" },
];

/** The routes' own body limits, by action. */
export function bodyLimits(routes: Route[] = ROUTES): Map<string, number> {
  return new Map(routes.flatMap((r) => (r.bodyLimitBytes ? [[r.action, r.bodyLimitBytes] as const] : [])));
}

/** The table in moleculer-web's alias form ("POST /orders": "orders.create"). */
export function aliases(routes: Route[] = ROUTES): Record<string, string> {
  // `stream:` hands the request itself to the action as its stream (moleculer-web's stream alias).
  return Object.fromEntries(routes.map((r) => [`${r.method} ${r.path}`, `${r.streamed ? "stream:" : ""}${r.action}`]));
}
