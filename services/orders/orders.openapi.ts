/**
 * JSON Schema (2020-12) of the order representation (orders.representation.ts, its snapshots in
 * orders.snapshots.ts): the body of GET /orders/{id}, of POST /orders, of validate and cancel,
 * and of the order webhooks.
 * Everything inside is a snapshot taken when the order was created, so the packaging, contact
 * and customer shapes are the order's own, not references to the live catalogue or crm.
 */
import { ORDER_STATUSES } from "./orders.params";

const timestamp = { type: "string", format: "date-time" } as const;
const nullableTimestamp = { type: ["string", "null"], format: "date-time" } as const;

const tax = {
  type: "object",
  required: ["name", "rate", "vat"],
  properties: { name: { type: "string" }, rate: { type: "number" }, vat: { type: "boolean" } },
  additionalProperties: false,
} as const;

const address = {
  type: "object",
  required: ["recipient", "street", "zipCode", "city", "country"],
  properties: {
    recipient: { type: "string" },
    street: { type: "string" },
    zipCode: { type: "string" },
    city: { type: "string" },
    country: { type: "string", pattern: "^[A-Z]{2}$", description: "ISO 3166-1 alpha-2 country code." },
  },
  additionalProperties: false,
} as const;

const packagingSnapshot = {
  type: "object",
  description: "The packaging, its product and taxes as they were when ordered.",
  required: ["id", "name", "unit", "unit_factor", "product"],
  properties: {
    id: { type: "integer" },
    name: { type: "string" },
    unit: { type: "string" },
    unit_factor: { type: "number" },
    product: {
      type: "object",
      required: ["id", "code", "label", "taxes"],
      properties: {
        id: { type: "integer" },
        code: { type: "string" },
        label: { type: "string" },
        taxes: { type: "array", items: tax },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

const item = {
  type: "object",
  required: ["position", "orderedQuantity", "packaging", "packagingReference"],
  properties: {
    position: {
      type: "integer",
      minimum: 1,
      description: "Number of the line: its place in the order's `items`, counted from 1.",
    },
    orderedQuantity: { type: "number", exclusiveMinimum: 0 },
    packaging: packagingSnapshot,
    packagingReference: {
      description: "The partner's packaging reference the line was ordered by, if any.",
      type: ["object", "null"],
      required: ["id", "externalReference", "label"],
      properties: { id: { type: "integer" }, externalReference: { type: "string" }, label: { type: "string" } },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

/** A validated order as the API and the order webhooks show it (the event catalogue's example; a unit test validates it). */
const orderExample = {
  id: 41,
  code: "ORD-20261121-41",
  status: "validated",
  externalId: "ERP-2026-0413",
  externalReference: "PO 77812",
  contact: {
    id: 7,
    firstName: "Ada",
    lastName: "Lovelace",
    email: "ada@example.com",
    reference: null,
  },
  customer: { id: 3, name: "Analytical Engines Ltd" },
  invoicingAddress: {
    recipient: "Analytical Engines Ltd",
    street: "12 St James's Square",
    zipCode: "SW1Y 4JH",
    city: "London",
    country: "GB",
  },
  deliveryAddress: {
    recipient: "Ada Lovelace",
    street: "12 St James's Square",
    zipCode: "SW1Y 4JH",
    city: "London",
    country: "GB",
  },
  items: [
    {
      position: 1,
      orderedQuantity: 2,
      packaging: {
        id: 5,
        name: "Bottle 75 cl",
        unit: "bottle",
        unit_factor: 0.75,
        product: { id: 2, code: "OIL", label: "Olive oil", taxes: [{ name: "VAT", rate: 20, vat: true }] },
      },
      packagingReference: null,
    },
  ],
  createdAt: "2026-11-21T10:00:00.000Z",
  updatedAt: "2026-11-21T10:05:00.000Z",
  validatedAt: "2026-11-21T10:05:00.000Z",
  cancelledAt: null,
} as const;

export const Order = {
  type: "object",
  description: "A sales order. Also the body of the sales_order_* webhooks.",
  examples: [orderExample],
  required: [
    "id",
    "code",
    "status",
    "externalId",
    "externalReference",
    "contact",
    "customer",
    "invoicingAddress",
    "deliveryAddress",
    "items",
    "createdAt",
    "updatedAt",
    "validatedAt",
    "cancelledAt",
  ],
  properties: {
    id: { type: "integer" },
    code: {
      type: "string",
      pattern: "^ORD-\\d{8}-\\d+$",
      description: "Order code, `ORD-<YYYYMMDD>-<sequence>`.",
      examples: ["ORD-20261121-1"],
    },
    status: { enum: [...ORDER_STATUSES], description: "pending → validated → cancelled, or pending → cancelled." },
    externalId: { type: ["string", "null"], description: "The client's own identifier of the order." },
    externalReference: { type: ["string", "null"], description: "The client's own order number." },
    contact: {
      type: "object",
      required: ["id", "firstName", "lastName", "email", "reference"],
      properties: {
        id: { type: "integer" },
        firstName: { type: "string" },
        lastName: { type: "string" },
        email: { type: "string", format: "email" },
        reference: {
          description: "The partner's contact reference the contact was named by, if any.",
          type: ["object", "null"],
          required: ["id", "externalReference"],
          properties: { id: { type: "integer" }, externalReference: { type: "string" } },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    customer: { $ref: "#/components/schemas/CustomerSummary" },
    invoicingAddress: address,
    deliveryAddress: address,
    items: { type: "array", minItems: 1, items: item },
    createdAt: timestamp,
    updatedAt: timestamp,
    validatedAt: nullableTimestamp,
    cancelledAt: nullableTimestamp,
  },
  additionalProperties: false,
} as const;

/** POST /orders/batch's answer (orders.batch-intake.ts). */
export const OrderBatchResults = {
  type: "object",
  description:
    "One result per order sent, in the order sent. Each `status` is what `POST /api/v1/orders` would have answered that order alone: 201 with the `order`, else a `problem`.",
  required: ["results"],
  properties: {
    results: {
      type: "array",
      items: {
        type: "object",
        required: ["index", "status"],
        properties: {
          index: { type: "integer", minimum: 0, description: "The order's place in `orders`, from 0." },
          status: {
            type: "integer",
            description:
              "201 taken; 403 a scope is missing; 409 its `externalId` is taken (`existingOrderId`) or repeats an earlier row's (`duplicateOfIndex`); 422 invalid (`errors` with the order's own paths); 424 good but not taken: another row was refused under `reject_all` (`refusedRows`).",
          },
          order: { $ref: "#/components/schemas/Order" },
          problem: {
            allOf: [{ $ref: "#/components/schemas/Problem" }],
            description: "Why the order was not taken, as a single POST would say it, plus its `index`.",
          },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
  examples: [
    {
      results: [
        { index: 0, status: 201, order: orderExample },
        {
          index: 1,
          status: 422,
          problem: {
            type: "/problems/validation-failed",
            title: "Your request has invalid fields",
            status: 422,
            detail: "items[0].orderedQuantity: The 'items[0].orderedQuantity' field must be a positive number.",
            errors: [
              {
                path: "items[0].orderedQuantity",
                message: "The 'items[0].orderedQuantity' field must be a positive number.",
              },
            ],
            index: 1,
          },
        },
      ],
    },
  ],
} as const;
