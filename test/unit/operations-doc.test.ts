/**
 * docs/operations.md documents every configuration variable: its table is the one generated
 * from VARIABLES (shared/config/variables.ts), so adding or changing a variable without the docs fails.
 */
import fs from "node:fs";
import path from "node:path";
import { VARIABLES } from "../../shared/config/variables";
import { TABLE_END, TABLE_START, variablesTable } from "../../runtime/config-table";

const doc = fs.readFileSync(path.resolve(__dirname, "../../docs/operations.md"), "utf8");

describe("docs/operations.md", () => {
  it("when its configuration table is read, then it names every variable of shared/config/variables.ts", () => {
    const start = doc.indexOf(TABLE_START);
    const end = doc.indexOf(TABLE_END);
    expect(start).toBeGreaterThanOrEqual(0);
    const rows = doc
      .slice(start, end)
      .split("\n")
      .map((line) => /^\| `(\w+)` \|/.exec(line)?.[1])
      .filter(Boolean);
    expect(rows.sort()).toEqual(Object.keys(VARIABLES).sort());
  });

  it("when its configuration table is compared with VARIABLES, then it is the generated one (npm run -s cli -- config variables)", () => {
    expect(doc).toContain(variablesTable());
  });
});
