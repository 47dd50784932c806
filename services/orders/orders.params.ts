/**
 * Validation schemas of the orders actions and their static types.
 * Requiredness beyond the interface is ours (docs/api.md): addresses and items are required;
 * how the contact and each item are identified is checked in orders.identify.ts, because
 * "exactly one mode" is a rule across fields that a schema cannot say clearly.
 */
import { pageParams } from "../../shared/http/paging";
import { arrayOf, bodyId, exactlyOneMode, identifier, optional, pathId, referenceTo } from "../../shared/http/params";
import type { ParamsOf } from "../../shared/schema-types";
import { lookupParams } from "./orders.lookup-params";

export const MAX_ITEMS = 1000;
export const ORDER_STATUSES = ["pending", "validated", "cancelled"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

const text = (max: number) => ({ type: "string", trim: true, min: 1, max }) as const;
/** An external id, an order number, a reference's code: compared as sent, never trimmed. */
const optionalIdentifier = (max: number) => optional(identifier(max));

/** How an item or the contact names a partner reference (shared/http/params.ts, referenceTo). */
const externalReferenceId = () => optional(referenceTo({ codes: true, maxLength: 100 }));
const internalReferenceId = () => optional(referenceTo({ codes: false, maxLength: 100 }));

/** At most three decimals, checked on the decimal text so that 0.1 + 0.2 style floats pass. */
function threeDecimalsAtMost(value: number, errors: { type: string; actual: unknown }[]): number {
  if (Number.isFinite(value) && !/^\d+(\.\d{1,3})?$/.test(String(value)))
    errors.push({ type: "quantityDecimals", actual: value });
  return value;
}

const address = {
  type: "object",
  strict: true,
  props: {
    recipient: text(200),
    street: text(300),
    zipCode: text(20),
    city: text(100),
    // Upper-cased before the check: "fr" is FR.
    country: {
      type: "string",
      trim: true,
      uppercase: true,
      max: 2,
      pattern: /^[A-Za-z]{2}$/,
      messages: { stringPattern: "The '{field}' field must be a two-letter country code (ISO 3166-1 alpha-2)." },
    },
  },
} as const;

export const createOrderParams = {
  $$strict: true,
  externalId: optionalIdentifier(100),
  externalReference: optionalIdentifier(100),
  contact: {
    type: "object",
    strict: true,
    props: {
      id: optional(bodyId()),
      externalReferenceId: externalReferenceId(),
      internalReferenceId: internalReferenceId(),
      externalReference: optionalIdentifier(100),
      firstName: optional(text(200)),
      lastName: optional(text(200)),
      email: optional({ type: "email", max: 254, normalize: true }),
    },
    // Checked in orders.identify.ts; written here so that the OpenAPI document says it (docs/api.md).
    jsonSchemaAlso: exactlyOneMode([
      { requires: ["id"] },
      { requires: ["externalReferenceId"] },
      { requires: ["internalReferenceId"] },
      { requires: ["externalReference", "firstName", "lastName", "email"] },
    ]),
  },
  customer: optional({ type: "object", strict: true, props: { name: text(200) } }),
  invoicingAddress: address,
  deliveryAddress: address,
  items: arrayOf(
    {
      type: "object",
      strict: true,
      jsonSchemaAlso: exactlyOneMode([
        { requires: ["packaging"] },
        { requires: ["externalReferenceId"] },
        { requires: ["internalReferenceId"] },
      ]),
      props: {
        packaging: optional(bodyId()),
        externalReferenceId: externalReferenceId(),
        internalReferenceId: internalReferenceId(),
        orderedQuantity: {
          type: "number",
          positive: true,
          max: 1_000_000_000,
          custom: threeDecimalsAtMost,
          jsonSchemaAlso: { multipleOf: 0.001, description: "At most 3 decimal places." },
          messages: { quantityDecimals: "The '{field}' field must have at most 3 decimals." },
        },
      },
    },
    { min: 1, max: MAX_ITEMS },
  ),
} as const;

/** The types of the params, read off the schemas above (shared/schema-types.ts). */
export type CreateOrderParams = ParamsOf<typeof createOrderParams>;
export type AddressInput = CreateOrderParams["invoicingAddress"];
export type ContactInput = CreateOrderParams["contact"];
export type ItemInput = CreateOrderParams["items"][number];

export const MAX_BATCH_ORDERS = 500;
/**
 * How long a batch may take, in place of REQUEST_TIMEOUT_MS (10 s by default): its work grows
 * with its size, and 500 orders of many items each, on a busy node, outlast a call's usual
 * time. A batch is never sent again by the platform, so a longer wait costs no retry.
 */
export const BATCH_TIMEOUT_MS = 60_000;
export const ERROR_POLICIES = ["reject_all", "reject_failed_rows"] as const;
export type ErrorPolicy = (typeof ERROR_POLICIES)[number];

/**
 * POST /orders/batch. Each order is checked against createOrderParams on its own
 * (orders.batch-intake.ts), so that a bad one is refused alone, its errors named by its own
 * paths (`items[0].orderedQuantity`); here only that it is an object.
 */
export const createOrdersBatchParams = {
  $$strict: true,
  orders: arrayOf(
    {
      type: "object",
      // Not the order's schema: a row that breaks it is answered in its result (422), not by
      // refusing the request, and the document says what the server refuses.
      jsonSchemaAlso: {
        description:
          "An order, as the body of `POST /api/v1/orders` (its request schema). Each is checked on its own: one that breaks a rule is answered 422 in its result.",
      },
    },
    { min: 1, max: MAX_BATCH_ORDERS },
  ),
  errorPolicy: {
    type: "enum",
    values: [...ERROR_POLICIES],
    jsonSchemaAlso: {
      description:
        "`reject_all`: nothing is taken unless every order is good; `reject_failed_rows`: the good orders are taken.",
    },
  },
} as const;
export type CreateOrdersBatchParams = ParamsOf<typeof createOrdersBatchParams>;

export const orderIdParams = { $$strict: true, id: pathId("order") } as const;
export type OrderIdParams = ParamsOf<typeof orderIdParams>;

export const listOrdersParams = {
  $$strict: true,
  ...pageParams,
  status: optional({ type: "enum", values: [...ORDER_STATUSES] }),
  ...lookupParams,
} as const;
export type ListOrdersParams = ParamsOf<typeof listOrdersParams>;
