/**
 * The event catalogue (GET /api/v1/webhooks/event_types, webhooks.event-type-actions.ts): each
 * event's schema is the body schema of its request in the OpenAPI `webhooks` section, made
 * self-contained; its example validates against it (Ajv, JSON Schema 2020-12) and against the
 * document; its description and version are the contract's.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { buildOpenApiDocument } from "../../gateway/openapi/document";
import { webhookBodySchemas } from "../../gateway/openapi/webhooks";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";
import {
  DOMAIN_EVENTS,
  EVENTS,
  SUBSCRIPTION_EVENT_NAMES,
  type DeliveredEventName,
} from "../../shared/messaging/events";
import { eventType } from "../../services/webhooks/webhooks.event-type-actions";
import { DocumentSchemas, pointer, type Document } from "../helpers/openapi-schemas";

const bodies = webhookBodySchemas(SERVICE_DESCRIPTIONS);
const document = JSON.parse(JSON.stringify(buildOpenApiDocument(SERVICE_DESCRIPTIONS))) as Document;
const inDocument = new DocumentSchemas(document);
const DELIVERED: DeliveredEventName[] = [...EVENTS, ...SUBSCRIPTION_EVENT_NAMES];

function ajv() {
  const validator = new Ajv2020({ strict: true, allErrors: true });
  addFormats(validator);
  return validator;
}

describe("the event catalogue", () => {
  it("when every event is listed, then each has an entry with the contract's description and version", () => {
    expect(EVENTS.map((event) => eventType(event, bodies))).toEqual(
      EVENTS.map((event) => ({
        event,
        description: DOMAIN_EVENTS[event].meaning,
        schema: expect.objectContaining({ $schema: "https://json-schema.org/draft/2020-12/schema" }),
        example: expect.anything(),
        version: DOMAIN_EVENTS[event].version,
      })),
    );
  });

  it.each(DELIVERED.map((event) => [event]))(
    "when %s's schema is compiled on its own, then its example validates against it",
    (event) => {
      const schema = bodies[event];
      const validate = ajv().compile(schema);
      const [example] = schema.examples as unknown[];
      expect({ event, errors: validate(example) ? [] : validate.errors }).toEqual({ event, errors: [] });
      expect(JSON.stringify(schema)).not.toContain("#/components/");
    },
  );

  it.each(DELIVERED.map((event) => [event]))(
    "when %s's example is checked against the OpenAPI webhooks section, then the document accepts it too",
    (event) => {
      const [example] = bodies[event].examples as unknown[];
      const at = pointer("webhooks", event, "post", "requestBody", "content", "application/json", "schema");
      expect({ event, problems: inDocument.validate(at, example) }).toEqual({ event, problems: [] });
    },
  );

  it("when an example breaks its schema, then the self-contained schema refuses it (the check has teeth)", () => {
    const order = bodies.sales_order_validated;
    const [example] = order.examples as Record<string, unknown>[];
    const validate = ajv().compile(order);
    expect(validate({ ...example, customer: { id: "3" } })).toBe(false);
    expect(validate({ ...example, status: "shipped" })).toBe(false);
  });
});
