import { Errors as WebErrors } from "moleculer-web";
import {
  MalformedRequestError,
  MethodNotAllowedError,
  ServiceUnavailableError,
  UnsupportedMediaTypeError,
} from "../../shared/errors";
import { toProblem } from "../../shared/http/problem";

describe("gateway problem mapping", () => {
  it("when moleculer-web finds no node for an action yet, then the answer is 503 unavailable, not 500", () => {
    // moleculer-web throws it without a type (aliasHandler in src/index.js), though its typings ask for one.
    const thrown = new WebErrors.ServiceUnavailableError(undefined as unknown as string);

    const problem = toProblem(thrown, "/api/v1/orders");

    expect(problem.status).toBe(503);
    expect(problem.body.type).toBe("/problems/unavailable");
  });
});

describe("problem mapping of the gateway's own refusals", () => {
  it("when a 405 is mapped, then Allow lists the methods", () => {
    const problem = toProblem(new MethodNotAllowedError("DELETE", ["GET", "HEAD", "OPTIONS"]));
    expect(problem.status).toBe(405);
    expect(problem.headers.Allow).toBe("GET, HEAD, OPTIONS");
  });

  it("when a 415 names the media type or the encodings, then Accept-Post or Accept-Encoding says so", () => {
    expect(
      toProblem(new UnsupportedMediaTypeError("x", { mediaType: "application/json" })).headers["Accept-Post"],
    ).toBe("application/json");
    expect(toProblem(new UnsupportedMediaTypeError("x", { encodings: "gzip" })).headers["Accept-Encoding"]).toBe(
      "gzip",
    );
  });

  it("when the database is unavailable, then it is 503 with Retry-After and a detail that says only what", () => {
    const problem = toProblem(new ServiceUnavailableError("The database is unavailable.", 5));
    expect(problem).toMatchObject({
      status: 503,
      headers: { "Retry-After": "5" },
      body: { type: "/problems/unavailable", detail: "The database is unavailable." },
    });
  });

  it("when the validator reports hundreds of unknown fields, then 50 are listed and errorCount counts them all", () => {
    const keys = Array.from({ length: 300 }, (_, i) => `x${i}`).join(", ");
    const problem = toProblem({
      type: "VALIDATION_ERROR",
      code: 422,
      data: [{ type: "objectStrict", field: "", actual: keys }],
    });
    expect(problem.body.errors).toHaveLength(50);
    expect(problem.body.errorCount).toBe(300);
    expect(problem.body.detail).toBe("300 fields are invalid.");
  });

  it("when a header is malformed, then it is 400 naming the header", () => {
    const problem = toProblem(MalformedRequestError.header("X-Request-Id", "bad"));
    expect(problem.status).toBe(400);
    expect(problem.body.errors).toEqual([{ path: "X-Request-Id", message: "bad" }]);
  });
});
