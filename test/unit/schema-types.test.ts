/**
 * The types read off schemas (shared/schema-types.ts) say what the schemas accept. Each value
 * below is typed by `ParamsOf` / `FromJsonSchema` and then checked at run time by fastest-validator
 * or by the JSON Schema itself (ajv): a value the type allows passes, and a value the type refuses
 * (`@ts-expect-error`, so `npm run typecheck` fails if the type stops refusing it) is refused.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import Validator from "fastest-validator";
import { CustomerSummary } from "../../services/crm/crm.openapi";
import { Order as OrderSchema } from "../../services/orders/orders.openapi";
import {
  createOrderParams,
  listOrdersParams,
  type CreateOrderParams,
  type ListOrdersParams,
} from "../../services/orders/orders.params";
import type { Order } from "../../services/orders/orders.representation";
import { arrayOf, bodyId, optional, pathId } from "../../shared/http/params";
import type { FromJsonSchema, ParamsOf } from "../../shared/schema-types";

const validator = new Validator({ useNewCustomCheckerFunction: true });
const passes = (schema: object, value: unknown) => validator.compile(schema)(value) === true;

const address = { recipient: "Acme", street: "5 Main Road", zipCode: "69001", city: "Lyon", country: "FR" };

describe("ParamsOf: the params type of a fastest-validator schema", () => {
  const schema = {
    $$strict: true,
    id: pathId("thing"),
    owner: optional(bodyId()),
    tags: arrayOf({ type: "enum", values: ["a", "b"] }, { max: 2 }),
    note: { type: "string", nullable: true },
  } as const;
  type Params = ParamsOf<typeof schema>;

  it("when a value has what the type requires, then the validator accepts it", () => {
    const value: Params = { id: 1, tags: ["a"], note: null };
    expect(passes(schema, value)).toBe(true);
  });

  it("when a required field is left out, then the type and the validator both refuse it", () => {
    // @ts-expect-error `tags` is required
    const value: Params = { id: 1, note: "x" };
    expect(passes(schema, value)).toBe(false);
  });

  it("when an enum element is outside its values, then the type and the validator both refuse it", () => {
    // @ts-expect-error "c" is not one of the values
    const value: Params = { id: 1, tags: ["c"], note: null };
    expect(passes(schema, value)).toBe(false);
  });

  it("when an order is typed CreateOrderParams, then orders.create's schema accepts it", () => {
    const order: CreateOrderParams = {
      contact: { externalReferenceId: "PARTNER-CONTACT-1" },
      invoicingAddress: address,
      deliveryAddress: address,
      items: [{ packaging: 2, orderedQuantity: 3 }],
    };
    expect(passes(createOrderParams, order)).toBe(true);
  });

  it("when a status is not an order status, then ListOrdersParams and the schema both refuse it", () => {
    // @ts-expect-error "shipped" is no order status
    const query: ListOrdersParams = { status: "shipped" };
    expect(passes(listOrdersParams, query)).toBe(false);
  });
});

describe("FromJsonSchema: the type of a representation's JSON Schema", () => {
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  // The order's `$ref` to CustomerSummary resolves inside this document, as in the OpenAPI one.
  const validOrder = ajv.compile({ ...OrderSchema, components: { schemas: { CustomerSummary } } });

  const order: Order = {
    id: 1,
    code: "ORD-20261121-1",
    status: "pending",
    version: 1,
    externalId: null,
    externalReference: null,
    contact: { id: 1, firstName: "Ada", lastName: "Lovelace", email: "ada@example.com", reference: null },
    customer: { id: 1, name: "Acme" },
    invoicingAddress: address,
    deliveryAddress: address,
    items: [
      {
        position: 1,
        orderedQuantity: 3,
        packagingReference: null,
        packaging: {
          id: 2,
          name: "Pack",
          unit: "bottle",
          unit_factor: 6,
          product: { id: 1, code: "W", label: "Water", taxes: [] },
        },
      },
    ],
    createdAt: "2026-11-21T10:00:00.000Z",
    updatedAt: "2026-11-21T10:00:00.000Z",
    validatedAt: null,
    cancelledAt: null,
  };

  it("when a value is an Order, then the Order schema accepts it", () => {
    expect(validOrder(order) ? [] : validOrder.errors).toEqual([]);
  });

  it("when a nullable field is null and a required one is missing, then the type and the schema refuse only the missing one", () => {
    const { code: _code, ...withoutCode } = order;
    // @ts-expect-error `code` is required
    const missing: Order = withoutCode;
    expect(validOrder(missing)).toBe(false);
    const cancelledNull: Order = { ...order, cancelledAt: null };
    expect(validOrder(cancelledNull)).toBe(true);
  });

  it("when a schema lists several types, then the type is their union", () => {
    const schema = { type: ["integer", "null"] } as const;
    const values: FromJsonSchema<typeof schema>[] = [1, null];
    // @ts-expect-error a string is neither
    const wrong: FromJsonSchema<typeof schema> = "1";
    expect(values.map((v) => ajv.validate(schema, v))).toEqual([true, true]);
    expect(ajv.validate(schema, wrong)).toBe(false);
  });
});
