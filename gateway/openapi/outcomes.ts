/**
 * What each routed action answers when it succeeds, and when it can conflict: the one thing the
 * document cannot read from the action definitions (the status is set at run time through
 * `ctx.meta.$statusCode`). Bodies are named by their component schema (the representations in
 * services/<name>/<name>.openapi.ts). The end-to-end contract test checks every answer against
 * this, so a wrong entry here fails a test.
 */
import type { Versioned } from "./versions";

export interface Success {
  status: 200 | 201 | 202 | 204;
  description: string;
  /** Component schema of the body (of each element, when `array`). */
  body?: string;
  /** The body is a JSON array of `body`. */
  array?: boolean;
  /** A page of a list: `?limit=`, `?cursor=` and a `Link` header to the next page. */
  paged?: boolean;
  /** 201 answers carry `Location`, the URL of the new resource. */
  location?: boolean;
}

export interface Outcome {
  success: Success[];
  /** When a 409 happens; absent when it cannot. */
  conflict?: string;
  /** When a 403 happens besides a missing scope (which the action's `scope` already says). */
  forbidden?: string;
  /** The route honours an `Idempotency-Key` request header. */
  idempotencyKey?: boolean;
  /** The route reads, changes or creates a versioned entity: ETag, and If-None-Match / If-Match (versions.ts). */
  versioned?: Versioned;
}

const one = (body: string, description = `The ${body}.`): Success => ({ status: 200, body, description });
const list = (body: string): Success => ({
  status: 200,
  body,
  array: true,
  paged: true,
  description: `A page of ${body} records, oldest first. When more exist, the \`Link\` header holds the URL of the next page (rel="next").`,
});
const created = (body: string): Success => ({
  status: 201,
  body,
  location: true,
  description: `Created; \`Location\` is the URL of the new ${body}.`,
});

/** A page of webhook deliveries, in the order asked, each with the body it sends. */
const deliveryPage = (what: string): Success => ({
  ...list("Delivery"),
  description:
    `A page of ${what}, oldest first (\`?order=desc\`: newest first), each with the body it sends and its attempts. ` +
    "A page also stops before ~512 KiB of JSON (it always holds at least one delivery), so it may hold fewer than `limit` " +
    'although more exist: the `Link` header (rel="next") is there whenever more exist; follow it until it is absent.',
});

/** Why a webhooks action that sends can be 409. */
const SENDING_CONFLICT =
  "The subscription is disabled (`/problems/subscription-disabled`: `POST /webhooks/{id}/enable` first), or a request with this `Idempotency-Key` is still in progress (`/problems/idempotency-key-in-flight`).";

export const OUTCOMES: Record<string, Outcome> = {
  "orders.create": {
    success: [created("Order")],
    conflict: "An order with this `externalId` already exists for this client (the problem names it).",
    idempotencyKey: true,
    versioned: "create",
  },
  "orders.createBatch": {
    success: [
      one(
        "OrderBatchResults",
        "One result per order, in the order sent; each says what `POST /api/v1/orders` would have answered that order.",
      ),
    ],
    idempotencyKey: true,
  },
  "orders.list": { success: [list("Order")] },
  "orders.get": { success: [one("Order")], versioned: "read" },
  "orders.validate": {
    success: [one("Order", "The validated order.")],
    conflict: "The order is not pending.",
    versioned: "change",
  },
  "orders.cancel": {
    success: [one("Order", "The cancelled order.")],
    conflict: "The order is already cancelled.",
    versioned: "change",
  },
  "orders.startImport": {
    success: [
      {
        status: 202,
        body: "OrderImport",
        location: true,
        description:
          "Every line is stored and the import is queued; `Location` is where its progress is read. Too many lines or bytes is 413 naming the limit (`limitLines`, `limitBytes`), and nothing is kept.",
      },
    ],
  },
  "orders.getImport": { success: [one("OrderImport", "The import, its counts and timings.")] },
  "orders.importResults": {
    success: [
      {
        status: 200,
        body: "OrderImportResult",
        description:
          "The results so far, as NDJSON (`application/x-ndjson`): one OrderImportResult per line, in line order; the schema is that of each line.",
      },
    ],
  },

  "crm.listContacts": { success: [list("Contact")] },
  "crm.createContact": {
    success: [created("Contact")],
    conflict: "The customer already has a contact with this e-mail address.",
  },
  "crm.getContact": { success: [one("Contact")] },
  "crm.listCustomers": { success: [list("Customer")] },
  "crm.createCustomer": { success: [created("Customer")], conflict: "A customer with this name already exists." },
  "crm.getCustomer": { success: [one("Customer")] },

  "catalogue.listPackagings": { success: [list("Packaging")] },
  "catalogue.createPackaging": { success: [created("Packaging")] },
  "catalogue.getPackaging": { success: [one("Packaging")] },
  "catalogue.listProducts": { success: [list("Product")] },
  "catalogue.createProduct": { success: [created("Product")], conflict: "A product with this code already exists." },
  "catalogue.getProduct": { success: [one("Product")] },

  "references.listContactReferences": { success: [list("ContactReference")] },
  "references.createContactReference": {
    success: [
      created("ContactReference"),
      one(
        "ContactReference",
        "This partner already had a contact reference with this `externalReference`: it was updated.",
      ),
    ],
    versioned: "change",
  },
  "references.getContactReference": { success: [one("ContactReference")], versioned: "read" },
  "references.listPackagingReferences": { success: [list("PackagingReference")] },
  "references.createPackagingReference": {
    success: [created("PackagingReference")],
    conflict: "The client already has a packaging reference with this `externalReference`.",
  },
  "references.getPackagingReference": { success: [one("PackagingReference")] },

  "webhooks.available": {
    success: [
      { status: 200, body: "WebhookEvent", array: true, description: "The events this client may subscribe to." },
    ],
  },
  "webhooks.subscribe": {
    success: [
      {
        ...created("SubscriptionWithSecrets"),
        description: "Subscribed; the response holds the `key` and `secret`, shown here and on rotation only.",
      },
      one(
        "Subscription",
        "The subscription existed already for this event and URL (its key and secret are not shown again).",
      ),
    ],
    forbidden: "This client may not subscribe to this event (`GET /api/v1/webhooks/available` lists those it may).",
    conflict:
      "The subscription exists with another `signature` scheme (rotating it with that `signature` switches it).",
  },
  "webhooks.eventTypes": {
    success: [
      {
        status: 200,
        body: "EventType",
        array: true,
        description: "The events this client may subscribe to, each with the JSON Schema of its body and an example.",
      },
    ],
  },
  "webhooks.list": { success: [list("Subscription")] },
  "webhooks.get": { success: [one("Subscription")] },
  "webhooks.update": {
    success: [
      one(
        "Subscription",
        "The changed subscription: the same id, key, secret and deliveries; pending deliveries go to its URL as it is now.",
      ),
    ],
    conflict: "This client has another subscription to this event on the new `url` (the problem names it).",
  },
  "webhooks.unsubscribe": { success: [{ status: 204, description: "Unsubscribed; no further deliveries are made." }] },
  "webhooks.enable": {
    success: [
      one(
        "Subscription",
        "The subscription, active: deliveries are made to it again (`POST /webhooks/{id}/recover` queues again what failed meanwhile).",
      ),
    ],
  },
  "webhooks.disable": {
    success: [
      one(
        "Subscription",
        "The subscription, disabled: nothing is sent to it until `POST /webhooks/{id}/enable`; its owner's subscriptions to `webhook_endpoint_disabled` are told.",
      ),
    ],
  },
  "webhooks.stats": {
    success: [
      one(
        "SubscriptionStats",
        "Its health: attempts, success rate and latency over the window (24 hours unless `window=7d`) and bucket by bucket in it, backlog, last success and last failure.",
      ),
    ],
  },
  "webhooks.rotate": {
    success: [one("SubscriptionWithSecrets", "The subscription with its new key and secret, shown once.")],
  },
  "webhooks.deliveries": { success: [deliveryPage("this subscription's deliveries")] },
  "webhooks.searchDeliveries": { success: [deliveryPage("the deliveries of all this client's subscriptions")] },
  "webhooks.redeliver": {
    success: [{ status: 202, body: "Delivery", description: "The delivery is scheduled again." }],
    conflict: SENDING_CONFLICT,
    idempotencyKey: true,
  },
  "webhooks.sendTest": {
    success: [
      {
        status: 202,
        body: "Delivery",
        description: "The `webhook_test` delivery, queued; follow it in the subscription's deliveries.",
      },
    ],
    conflict: SENDING_CONFLICT,
    idempotencyKey: true,
  },
  "webhooks.recover": {
    success: [
      {
        status: 202,
        body: "Recovery",
        location: true,
        description: "The recovery is queued; `Location` is where its progress is read.",
      },
      {
        ...one(
          "Recovery",
          "The same recovery (window and `all`) was asked for in the last 60 s, or is not finished: this is it.",
        ),
        location: true,
      },
    ],
    conflict: `${SENDING_CONFLICT} Or another recovery of this subscription, with another window, is not finished (\`/problems/conflict\`, naming it).`,
    idempotencyKey: true,
  },
  "webhooks.recovery": { success: [one("Recovery", "The recovery and how far it got.")] },
  "webhooks.feed": {
    success: [
      {
        ...list("FeedEvent"),
        description:
          'A page of the events this client may receive, oldest first (by the transaction that wrote them). The `Link` header (rel="next") is always there: the feed has no last page; an empty page means you have read everything there is for now. A page also stops before ~512 KiB of JSON (it always holds at least one event), so it may hold fewer than `limit` although more exist.',
      },
    ],
    forbidden: "This client may not receive this `event` (`GET /api/v1/webhooks/available` lists those it may).",
  },

  "clients.createPortalSession": {
    success: [
      {
        status: 201,
        body: "PortalLink",
        description:
          "The sign-in link: hand `url` to the user (it opens the portal signed in as this client, once, until `expiresAt`).",
      },
    ],
    forbidden: "The caller is a portal session: only an API key mints links.",
  },
  "clients.exchangePortalLink": {
    success: [one("PortalSessionToken", "The session: send `token` as the Bearer credential until `expiresAt`.")],
    forbidden: "The Bearer credential is not a sign-in link's token.",
  },
  "clients.listPortalSessions": {
    success: [
      {
        ...one("PortalSession"),
        array: true,
        description: "The client's links and sessions that can still be used, newest first (at most 100).",
      },
    ],
  },
  "clients.revokePortalSession": { success: [one("PortalSession", "The revoked link or session.")] },
  "clients.create": { success: [created("ClientWithKey")] },
  "clients.list": { success: [list("Client")] },
  "clients.get": { success: [one("Client")] },
  "clients.update": { success: [one("Client", "The changed client.")], conflict: "The client is revoked." },
  "clients.revoke": { success: [one("Client", "The revoked client.")] },
  "clients.rotateKey": {
    success: [one("ClientWithKey", "The client with its new API key, shown once; every older key is revoked.")],
  },
};
