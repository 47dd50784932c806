/**
 * JSON Schemas (2020-12) of the clients representations (`present` in clients.service.ts), for
 * the OpenAPI document.
 */
import { CLIENT_KINDS, SCOPES } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";

const clientProperties = {
  id: { type: "integer" },
  name: { type: "string" },
  kind: { enum: [...CLIENT_KINDS] },
  scopes: { type: "array", items: { enum: [...SCOPES] } },
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
