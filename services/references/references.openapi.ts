/**
 * JSON Schemas (2020-12) of the partner-reference representations (references.representation.ts),
 * for the OpenAPI document. The packaging inside a packaging reference is the catalogue's
 * representation, embedded as is: it is referred to by its component name, not copied.
 */
const timestamp = { type: "string", format: "date-time" } as const;

/** A contact reference as the API and `contact_reference_created` show it (the event catalogue's example). */
const contactReferenceExample = {
  id: 18,
  externalReference: "CUST-0042",
  version: 1,
  contact: { id: 7, firstName: "Ada", lastName: "Lovelace", email: "ada@example.com" },
  customer: { id: 3, name: "Analytical Engines Ltd" },
  createdAt: "2026-11-21T09:58:00.000Z",
  updatedAt: "2026-11-21T09:58:00.000Z",
} as const;

export const ContactReference = {
  type: "object",
  description: "A contact registered by a partner under its own reference, with the contact and its customer.",
  examples: [contactReferenceExample],
  required: ["id", "externalReference", "version", "contact", "customer", "createdAt", "updatedAt"],
  properties: {
    id: { type: "integer", description: "Usable as `contact.internalReferenceId` in an order." },
    externalReference: {
      type: "string",
      description: "The partner's own identifier of the contact; usable as `contact.externalReferenceId`.",
    },
    version: {
      type: "integer",
      minimum: 1,
      description:
        "1 when registered, one more each time `POST /contact_references` registers it again: the `ETag` of `GET /contact_references/{id}` and what `If-Match` names.",
    },
    contact: {
      type: "object",
      required: ["id", "firstName", "lastName", "email"],
      properties: {
        id: { type: "integer" },
        firstName: { type: "string" },
        lastName: { type: "string" },
        email: { type: "string", format: "email" },
      },
      additionalProperties: false,
    },
    customer: { $ref: "#/components/schemas/CustomerSummary" },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
  additionalProperties: false,
} as const;

export const PackagingReference = {
  type: "object",
  description: "A packaging a partner may order, under the partner's own reference (docs/interface.md §2.7).",
  required: ["id", "externalReference", "active", "label", "packaging"],
  properties: {
    id: {
      type: "integer",
      description: "Identifier to use when ordering this packaging reference (`items[].internalReferenceId`).",
    },
    externalReference: {
      type: "string",
      description: "The partner's own code; usable as `items[].externalReferenceId`.",
    },
    active: { type: "boolean", description: "Whether the reference is active; an inactive one cannot be ordered." },
    label: { type: "string", description: "Label of the product." },
    packaging: { $ref: "#/components/schemas/Packaging" },
  },
  additionalProperties: false,
} as const;
