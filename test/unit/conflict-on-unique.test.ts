/**
 * The one place a broken unique constraint becomes a 409 (shared/database/database-errors.ts): the
 * caller's conflict for that constraint, or the database's own error when the caller has none.
 */
import { conflictOnUnique } from "../../shared/database/database-errors";
import { ConflictError } from "../../shared/errors";

/** What pg raises for a duplicate key. */
const uniqueViolation = (constraint: string) =>
  Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505", constraint });

describe("conflictOnUnique", () => {
  it("when the work succeeds, then its value is returned and no conflict is built", async () => {
    const conflict = jest.fn(() => new ConflictError("never"));
    await expect(conflictOnUnique(Promise.resolve(7), conflict)).resolves.toBe(7);
    expect(conflict).not.toHaveBeenCalled();
  });

  it("when a unique constraint breaks, then the caller's conflict is thrown, given the constraint's name", async () => {
    const conflict = jest.fn((constraint: string) => new ConflictError(`taken: ${constraint}`));
    await expect(conflictOnUnique(Promise.reject(uniqueViolation("customers_name_unique")), conflict)).rejects.toThrow(
      new ConflictError("taken: customers_name_unique"),
    );
    expect(conflict).toHaveBeenCalledWith("customers_name_unique");
  });

  it("when the conflict is looked up and found, then the looked-up conflict is thrown", async () => {
    const found = new ConflictError("you already sent it");
    await expect(conflictOnUnique(Promise.reject(uniqueViolation("x")), async () => found)).rejects.toBe(found);
  });

  it("when the caller has no conflict for that constraint, then the database's error goes on unchanged", async () => {
    const err = uniqueViolation("another_unique");
    await expect(conflictOnUnique(Promise.reject(err), () => undefined)).rejects.toBe(err);
  });

  it("when the error is not a unique violation, then it goes on unchanged and no conflict is built", async () => {
    const err = Object.assign(new Error("check violation"), { code: "23514" });
    const conflict = jest.fn(() => new ConflictError("never"));
    await expect(conflictOnUnique(Promise.reject(err), conflict)).rejects.toBe(err);
    expect(conflict).not.toHaveBeenCalled();
  });
});
