/**
 * JSON Schemas (2020-12) of the clients representations (`present` in clients.service.ts), for
 * the OpenAPI document.
 */
import { CLIENT_KINDS, GRANTABLE_SCOPES } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";

const clientProperties = {
  id: { type: "integer" },
  name: { type: "string" },
  kind: { enum: [...CLIENT_KINDS] },
  scopes: { type: "array", items: { enum: [...GRANTABLE_SCOPES] } },
  webhookEvents: {
    type: "array",
    items: { enum: [...EVENTS] },
    description: "Webhook events this client may subscribe to.",
  },
  createdAt: { type: "string", format: "date-time" },
  revokedAt: { type: ["string", "null"], format: "date-time" },
} as const;

const clientRequired = ["id", "name", "kind", "scopes", "webhookEvents", "createdAt", "revokedAt"] as const;

export const Client = {
  type: "object",
  description: "An API client: who calls the API, with what scopes.",
  required: [...clientRequired],
  properties: clientProperties,
  additionalProperties: false,
} as const;

export const ClientWithKey = {
  type: "object",
  description: "An API client with its new API key. The key is shown in this response only.",
  required: [...clientRequired, "apiKey"],
  properties: {
    ...clientProperties,
    apiKey: { type: "string", description: "Send as `Authorization: Bearer <apiKey>`. Never shown again." },
  },
  additionalProperties: false,
} as const;

const dateTime = { type: "string", format: "date-time" } as const;
const maybeDateTime = { type: ["string", "null"], format: "date-time" } as const;

export const PortalLink = {
  type: "object",
  description:
    "A sign-in link to the subscriber portal. The one-time token is in the URL's fragment, which browsers do not send to servers.",
  required: ["id", "url", "expiresAt"],
  properties: {
    id: { type: "integer", description: "The link, and the session it becomes (`DELETE /portal_sessions/{id}`)." },
    url: { type: "string", description: "The portal page with `#link=<token>`: usable once." },
    expiresAt: { ...dateTime, description: "Unused after this, the link is refused (PORTAL_LINK_TTL)." },
  },
  additionalProperties: false,
} as const;

export const PortalSessionToken = {
  type: "object",
  description: "A portal session: reaches this client's webhook routes, nothing else.",
  required: ["id", "token", "expiresAt", "client"],
  properties: {
    id: { type: "integer" },
    token: { type: "string", description: "Send as `Authorization: Bearer <token>`. Never shown again." },
    expiresAt: { ...dateTime, description: "The session ends then (PORTAL_SESSION_TTL)." },
    client: {
      type: "object",
      required: ["id", "name"],
      properties: { id: { type: "integer" }, name: { type: "string" } },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

export const PortalSession = {
  type: "object",
  description: "A sign-in link (`state: link`, not used yet) or the session it became.",
  required: ["id", "state", "createdAt", "linkExpiresAt", "signedInAt", "expiresAt", "revokedAt"],
  properties: {
    id: { type: "integer" },
    state: { enum: ["link", "session", "revoked"] },
    createdAt: dateTime,
    linkExpiresAt: dateTime,
    signedInAt: { ...maybeDateTime, description: "When the link was used; null while it is not." },
    expiresAt: { ...maybeDateTime, description: "When the session ends; null while the link is not used." },
    revokedAt: maybeDateTime,
  },
  additionalProperties: false,
} as const;
