import { isDatabaseUnavailable } from "../../shared/database/database-errors";

describe("which database errors mean 'unavailable'", () => {
  it.each([
    ["refused", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    [
      "admin shutdown",
      Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }),
    ],
    ["starting up", Object.assign(new Error("the database system is starting up"), { code: "57P03" })],
    ["cut under a query", new Error("Connection terminated unexpectedly")],
    [
      "pool time-out",
      Object.assign(new Error("Knex: Timeout acquiring a connection. The pool is probably full."), {
        name: "KnexTimeoutError",
      }),
    ],
    ["every address refused", new AggregateError([Object.assign(new Error("x"), { code: "ECONNREFUSED" })])],
  ])("when the error is %s, then it is", (_what, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it.each([
    ["a unique violation", Object.assign(new Error("duplicate key"), { code: "23505" })],
    ["a syntax error", Object.assign(new Error("syntax error"), { code: "42601" })],
    ["currval not yet defined (55000)", Object.assign(new Error("currval"), { code: "55000" })],
    ["not an error", "ECONNREFUSED"],
  ])("when the error is %s, then it is not", (_what, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});
