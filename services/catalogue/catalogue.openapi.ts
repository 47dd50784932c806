/**
 * JSON Schemas (2020-12) of the catalogue representations (catalogue.representation.ts), for the
 * OpenAPI document.
 */
const tax = {
  type: "object",
  required: ["name", "rate", "vat"],
  properties: {
    name: { type: "string", description: "Name of the tax." },
    rate: { type: "number", description: "Tax rate, as a percentage (20 means 20 %)." },
    vat: { type: "boolean", description: "Whether the tax is a value-added tax." },
  },
  additionalProperties: false,
} as const;

export const Product = {
  type: "object",
  description: "A product of the catalogue, with its taxes.",
  required: ["id", "code", "label", "taxes", "createdAt"],
  properties: {
    id: { type: "integer" },
    code: { type: "string", description: "Product code." },
    label: { type: "string", description: "Product label." },
    taxes: { type: "array", items: tax },
    createdAt: { type: "string", format: "date-time" },
  },
  additionalProperties: false,
} as const;

export const Packaging = {
  type: "object",
  description: "A packaging (what is ordered) of a product, with the product and its taxes.",
  required: ["id", "name", "unit", "unit_factor", "product"],
  properties: {
    id: { type: "integer", description: "The id to order this packaging by (`items[].packaging`)." },
    name: { type: "string", description: "Name of the packaging." },
    unit: { type: "string", description: "Name of the unit." },
    unit_factor: { type: "number", description: "Unit factor." },
    product: {
      type: "object",
      required: ["id", "code", "label", "taxes"],
      properties: {
        id: { type: "integer" },
        code: { type: "string", description: "Product code." },
        label: { type: "string", description: "Product label." },
        taxes: { type: "array", items: tax },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;
