/**
 * Files committed to the repository but generated from code, so that they cannot drift: the
 * OpenAPI document the gateway serves (docs/openapi.json) and every setting with its default
 * (.env.example). `npm run openapi:write` / `npm run env:write` rewrite them
 * (runtime/write-generated.ts); test/unit/generated-files.test.ts fails when one differs.
 */
import { buildOpenApiDocument } from "../gateway/openapi/document";
import { VARIABLES } from "../shared/config/variables";
import { SERVICE_DESCRIPTIONS } from "./services";

export interface GeneratedFile {
  /** Path from the repository root. */
  path: string;
  /** The npm script that rewrites it. */
  script: string;
  render(): string;
}

/**
 * The served document with its component schemas in name order: they come from module
 * namespaces, whose key order differs between compilers (tsc for dist/, swc under jest).
 */
function openApiJson(): string {
  const document = buildOpenApiDocument(SERVICE_DESCRIPTIONS) as unknown as {
    components: { schemas: Record<string, unknown> };
  };
  const schemas = Object.fromEntries(Object.entries(document.components.schemas).sort(([a], [b]) => (a < b ? -1 : 1)));
  return `${JSON.stringify({ ...document, components: { ...document.components, schemas } }, null, 2)}\n`;
}

/** A description as `#` comment lines of at most ~100 characters. */
function commentLines(text: string): string[] {
  const lines: string[] = [];
  let line = "#";
  for (const word of text.split(/\s+/)) {
    if (line.length + word.length + 1 > 100 && line !== "#") {
      lines.push(line);
      line = "#";
    }
    line += ` ${word}`;
  }
  return [...lines, line];
}

function envExample(): string {
  const blocks = (Object.entries(VARIABLES) as [string, { default?: string; description: string }][]).map(
    ([name, spec]) => [...commentLines(spec.description), `${name}=${spec.default ?? ""}`].join("\n"),
  );
  const header = [
    "# Every setting of order-intake with its default (generated from shared/config/variables.ts: npm run env:write).",
    "# The process reads its environment only: set what you change there (node --env-file=.env, Compose's",
    "# env_file, a Kubernetes ConfigMap). An unset variable takes the default shown.",
  ];
  return `${[header.join("\n"), ...blocks].join("\n\n")}\n`;
}

export const GENERATED_FILES: readonly GeneratedFile[] = [
  { path: "docs/openapi.json", script: "openapi:write", render: openApiJson },
  { path: ".env.example", script: "env:write", render: envExample },
];
