import { Errors as WebErrors } from "moleculer-web";
import { toProblem } from "../../gateway/problem";

describe("gateway problem mapping", () => {
  it("when moleculer-web finds no node for an action yet, then the answer is 503 unavailable, not 500", () => {
    // moleculer-web throws it without a type (aliasHandler in src/index.js), though its typings ask for one.
    const thrown = new WebErrors.ServiceUnavailableError(undefined as unknown as string);

    const problem = toProblem(thrown, "/api/v1/orders");

    expect(problem.status).toBe(503);
    expect(problem.body.type).toBe("/problems/unavailable");
  });
});
