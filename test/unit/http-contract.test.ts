/**
 * The contract checks of the e2e HTTP client (test/helpers/http.ts) catch what they must:
 * answers are checked against the generated document, here without any server.
 */
import { buildOpenApiDocument } from "../../gateway/openapi/document";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";
import { Contract, type ApiResponse } from "../helpers/http";

const contract = new Contract(buildOpenApiDocument(SERVICE_DESCRIPTIONS));
const JSON_TYPE = "application/json; charset=utf-8";
const PROBLEM_TYPE = "application/problem+json; charset=utf-8";

const customer = { id: 7, name: "Acme", ownerClientId: null, createdAt: "2026-11-21T10:00:00.000Z" };
const notFound = { type: "/problems/not-found", title: "Not found", status: 404, detail: "No customer with id 9." };

function answer(status: number, body: unknown, headers: Record<string, string> = {}): ApiResponse {
  return { status, body, headers: { "x-request-id": "r-1", ...headers } };
}

describe("the contract-checking client", () => {
  it("when an answer matches its operation, then nothing is reported", () => {
    expect(contract.check("GET", "/api/v1/customers/7", answer(200, customer), JSON_TYPE)).toEqual([]);
    expect(
      contract.check(
        "POST",
        "/api/v1/customers",
        answer(201, customer, { location: "/api/v1/customers/7" }),
        JSON_TYPE,
      ),
    ).toEqual([]);
    expect(contract.check("GET", "/api/v1/customers/9", answer(404, notFound), PROBLEM_TYPE)).toEqual([]);
  });

  it("when a required header is missing, then it is named", () => {
    expect(contract.check("POST", "/api/v1/customers", answer(201, customer), JSON_TYPE)).toEqual([
      "header Location is missing",
    ]);
    expect(
      contract.check("GET", "/api/v1/customers/7", { status: 200, body: customer, headers: {} }, JSON_TYPE),
    ).toEqual(["header X-Request-ID is missing"]);
  });

  it("when the status is not one the operation documents, then the documented ones are listed", () => {
    const [problem] = contract.check("GET", "/api/v1/customers/7", answer(409, notFound), PROBLEM_TYPE);
    expect(problem).toMatch(
      /^status 409 is not documented \(documented: 200, 400, 401, 403, 404, 422, 429, 503, 5XX\)$/,
    );
  });

  it("when a 503 comes without Retry-After, then the missing header is named", () => {
    const unavailable = {
      type: "/problems/unavailable",
      title: "Service unavailable",
      status: 503,
      detail: "Try again shortly.",
    };
    expect(contract.check("GET", "/api/v1/customers/7", answer(503, unavailable), PROBLEM_TYPE)).toEqual([
      "header Retry-After is missing",
    ]);
    expect(
      contract.check("GET", "/api/v1/customers/7", answer(503, unavailable, { "retry-after": "5" }), PROBLEM_TYPE),
    ).toEqual([]);
  });

  it("when the body breaks its schema, then the field and the rule are named", () => {
    expect(
      contract.check("GET", "/api/v1/customers/7", answer(200, { ...customer, id: "7", extra: 1 }), JSON_TYPE),
    ).toEqual(['body (root) must NOT have additional properties "extra"', "body /id must be integer"]);
  });

  it("when a problem is sent as plain JSON, or a list as an object, then it is reported", () => {
    expect(contract.check("GET", "/api/v1/customers/9", answer(404, notFound), JSON_TYPE)[0]).toMatch(
      /Content-Type "application\/json.*" is not documented/,
    );
    expect(contract.check("GET", "/api/v1/customers", answer(200, customer), JSON_TYPE)).toEqual([
      "body (root) must be array",
    ]);
  });

  it("when a path is concrete and templated at once, then the concrete operation is the one checked", () => {
    const events = [{ event: "sales_order_created", description: "An order was created." }];
    expect(contract.check("GET", "/api/v1/webhooks/available", answer(200, events), JSON_TYPE)).toEqual([]);
    expect(contract.check("GET", "/api/v1/nothing-here", answer(404, notFound), PROBLEM_TYPE)).toEqual([
      "no operation GET /api/v1/nothing-here is documented",
    ]);
  });

  it("when a webhook request lacks a header or has a wrong body, then each is reported", () => {
    const headers = {
      "x-webhook-event": "contact_reference_created",
      "x-webhook-key": "k",
      "user-agent": "order-intake/1.0.0",
      "webhook-id": "msg_1",
      "webhook-timestamp": "1700000000",
    };
    expect(contract.checkWebhook(headers, { id: 1 })).toEqual([
      "header webhook-signature is missing",
      "body (root) must have required property 'externalReference'",
      "body (root) must have required property 'version'",
      "body (root) must have required property 'contact'",
      "body (root) must have required property 'customer'",
      "body (root) must have required property 'createdAt'",
      "body (root) must have required property 'updatedAt'",
    ]);
  });
});
