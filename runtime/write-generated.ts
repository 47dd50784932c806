/**
 * `npm run openapi:write`, `npm run env:write`: rewrites the generated files named on the
 * command line (every one without arguments) at the repository root.
 */
import fs from "node:fs";
import path from "node:path";
import { GENERATED_FILES } from "./generated-files";

// dist/runtime/write-generated.js → the repository root.
const ROOT = path.resolve(__dirname, "../..");

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !GENERATED_FILES.some((file) => file.path === name));
if (unknown.length > 0) {
  console.error(
    `Not a generated file: ${unknown.join(", ")} (known: ${GENERATED_FILES.map((f) => f.path).join(", ")})`,
  );
  process.exit(2);
}
for (const file of GENERATED_FILES.filter((f) => wanted.length === 0 || wanted.includes(f.path))) {
  fs.writeFileSync(path.join(ROOT, file.path), file.render());
  console.log(`wrote ${file.path}`);
}
