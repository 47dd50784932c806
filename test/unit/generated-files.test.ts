/**
 * The committed generated files are what the code generates: docs/openapi.json is the document
 * the gateway serves, .env.example lists every setting of shared/config/variables.ts with its default.
 */
import fs from "node:fs";
import path from "node:path";
import { buildOpenApiDocument } from "../../gateway/openapi/document";
import { VARIABLES } from "../../shared/config/variables";
import { GENERATED_FILES } from "../../runtime/generated-files";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";

const ROOT = path.resolve(__dirname, "../..");
const committed = (file: string) =>
  fs.existsSync(path.join(ROOT, file)) ? fs.readFileSync(path.join(ROOT, file), "utf8") : "(missing)";

describe.each(GENERATED_FILES.map((file) => [file.path, file] as const))("when %s is committed", (name, file) => {
  it("then it is exactly what its script generates", () => {
    const same = committed(name) === file.render();
    expect(
      same ? "up to date" : `${name} differs from the generated one: run \`npm run ${file.script}\` and commit it`,
    ).toBe("up to date");
  });
});

describe("when the committed OpenAPI document is read", () => {
  it("then it is the served one, with servers and a license", () => {
    const document = JSON.parse(committed("docs/openapi.json")) as { info: { license: unknown }; servers: unknown[] };
    expect(document).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument(SERVICE_DESCRIPTIONS))));
    // Issue 20: a licence with an identifier (swagger-parser refuses one with neither identifier nor url).
    expect(document.info.license).toEqual({
      name: expect.stringMatching(/^Proprietary/),
      identifier: "LicenseRef-Proprietary",
    });
    expect(document.servers).toContainEqual({ url: "/", description: expect.any(String), "x-internal": false });
  });
});

describe("when .env.example is read", () => {
  it("then it sets every variable of shared/config/variables.ts once, to its default", () => {
    const settings = committed(".env.example")
      .split("\n")
      .filter((line) => /^[A-Z][A-Z0-9_]*=/.test(line));
    const expected = (Object.entries(VARIABLES) as [string, { default?: string }][]).map(
      ([name, spec]) => `${name}=${spec.default ?? ""}`,
    );
    expect(settings).toEqual(expected);
  });
});
