/**
 * JSON Schemas (2020-12) of the crm representations (crm.representation.ts), for the OpenAPI
 * document. Plain data: the gateway's document generator picks them up.
 */
const timestamp = { type: "string", format: "date-time" } as const;

export const Customer = {
  type: "object",
  description: "A customer organisation.",
  required: ["id", "name", "ownerClientId", "createdAt"],
  properties: {
    id: { type: "integer" },
    name: { type: "string" },
    ownerClientId: {
      type: ["integer", "null"],
      description:
        "The partner client it was created for (inline contacts, contact references); null when it is the instance's own.",
    },
    createdAt: timestamp,
  },
  additionalProperties: false,
} as const;

export const Contact = {
  type: "object",
  description: "A person at a customer, with that customer.",
  required: ["id", "firstName", "lastName", "email", "customer", "ownerClientId", "createdAt", "updatedAt"],
  properties: {
    id: { type: "integer" },
    firstName: { type: "string" },
    lastName: { type: "string" },
    email: { type: "string", format: "email" },
    customer: { $ref: "#/components/schemas/CustomerSummary" },
    ownerClientId: {
      type: ["integer", "null"],
      description:
        "The partner client its customer was created for (inline contacts, contact references); null when it is the instance's own.",
    },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
  additionalProperties: false,
} as const;

/** A customer named inside another representation (a contact, a reference, an order). */
export const CustomerSummary = {
  type: "object",
  required: ["id", "name"],
  properties: { id: { type: "integer" }, name: { type: "string" } },
  additionalProperties: false,
} as const;
