/**
 * docs/architecture.md points a newcomer at files: each it names must exist, so a move or a
 * rename that forgets the page fails here instead of sending the reader nowhere.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { sourceFiles } from "../helpers/import-graph";

const ROOT = path.resolve(__dirname, "../..");
const page = readFileSync(path.join(ROOT, "docs/architecture.md"), "utf8");

const shipped = sourceFiles(ROOT);

/** `gateway/problem.ts`, `request-id.ts`; not patterns such as `<name>.service.ts` or `.params.ts`. */
const named = [
  ...new Set([...page.matchAll(/`([\w./-]+\.ts)`/g)].map((m) => m[1]).filter((name) => !name.startsWith("."))),
];

describe("docs/architecture.md", () => {
  it("when it names files, then it names some", () => {
    expect(named).toEqual(
      expect.arrayContaining(["shared/messaging/events.ts", "shared/http/problem.ts", "runtime/services.ts"]),
    );
  });

  it.each(named.filter((name) => name.includes("/")).map((name) => [name]))(
    "when it names the path %s, then the file exists",
    (name) => {
      expect(existsSync(path.join(ROOT, name))).toBe(true);
    },
  );

  // A bare name is read in the context of its sentence (`admission.ts` under the gateway): it must not be ambiguous.
  it.each(named.filter((name) => !name.includes("/")).map((name) => [name]))(
    "when it names the file %s, then exactly one shipped file has that name",
    (name) => {
      expect(shipped.filter((file) => path.posix.basename(file) === name)).toHaveLength(1);
    },
  );
});
