/**
 * againAfterDeadlock (shared/database/database-errors.ts): a statement ended by PostgreSQL to
 * break a deadlock is sent again, a bounded number of times; any other error goes on at once.
 * (Against a real deadlock: test/integration/webhooks.per-entity-order.test.ts.)
 */
import { againAfterDeadlock, isDeadlock } from "../../shared/database/database-errors";

const deadlock = () => Object.assign(new Error("deadlock detected"), { code: "40P01" });

/** A statement that fails with `errors` in turn, then answers "done"; counts its calls. */
function statement(...errors: Error[]) {
  const s = {
    calls: 0,
    run: () => (++s.calls <= errors.length ? Promise.reject(errors[s.calls - 1]) : Promise.resolve("done")),
  };
  return s;
}

describe("againAfterDeadlock", () => {
  it("when the statement is a deadlock's victim twice, then it is sent a third time and its answer comes back", async () => {
    const s = statement(deadlock(), deadlock());
    await expect(againAfterDeadlock(s.run)).resolves.toBe("done");
    expect(s.calls).toBe(3);
  });

  it("when it is one three times in a row, then the third deadlock goes on", async () => {
    const s = statement(deadlock(), deadlock(), deadlock());
    await expect(againAfterDeadlock(s.run)).rejects.toMatchObject({ code: "40P01" });
    expect(s.calls).toBe(3);
  });

  it.each([
    ["a unique violation", Object.assign(new Error("duplicate key"), { code: "23505" })],
    ["a lost connection", Object.assign(new Error("Connection terminated"), { code: "ECONNRESET" })],
    ["an error with no code", new Error("boom")],
  ])("when it fails with %s, then that error goes on at once", async (_, err) => {
    const s = statement(err);
    await expect(againAfterDeadlock(s.run)).rejects.toBe(err);
    expect(s.calls).toBe(1);
    expect(isDeadlock(err)).toBe(false);
  });
});
