import { asRecordId, candidateKeys, indexCandidates, pick } from "../../services/references/references.lookup";

describe("reference lookups", () => {
  it("when a value is digits within the id range, then it names a record id; otherwise it does not", () => {
    expect(asRecordId("42")).toBe(42);
    expect(asRecordId("0042")).toBeNull();
    expect(asRecordId("0")).toBeNull();
    expect(asRecordId("2147483648")).toBeNull();
    expect(asRecordId("4.2")).toBeNull();
    expect(asRecordId("-1")).toBeNull();
    expect(asRecordId("C-42")).toBeNull();
  });

  it("when lookups are mixed, then the candidates hold every id and only the external codes", () => {
    const keys = candidateKeys([
      { by: "internal", value: "7" },
      { by: "internal", value: "C-1" },
      { by: "external", value: "C-2" },
      { by: "external", value: "9" },
      { by: "external", value: "C-2" },
    ]);
    expect(keys).toEqual({ ids: [7, 9], externalReferences: ["C-2", "9"] });
  });

  it("when a value is one record's code and another's id, then external picks the code and internal the id", () => {
    const index = indexCandidates([
      { id: 5, external_reference: "A" },
      { id: 6, external_reference: "5" },
    ]);
    expect(pick(index, { by: "external", value: "5" })?.id).toBe(6);
    expect(pick(index, { by: "internal", value: "5" })?.id).toBe(5);
    expect(pick(index, { by: "external", value: "A" })?.id).toBe(5);
    expect(pick(index, { by: "internal", value: "A" })).toBeNull();
    expect(pick(index, { by: "external", value: "7" })).toBeNull();
  });
});
