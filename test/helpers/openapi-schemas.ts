/**
 * JSON Schema validation of values against schemas inside an OpenAPI 3.1 document, with Ajv
 * (draft 2020-12, the dialect of OpenAPI 3.1) and ajv-formats. The whole document is registered
 * once, so `$ref: "#/components/schemas/..."` resolve as they do for any OpenAPI tool; a schema
 * is named by its JSON pointer in the document.
 */
import Ajv2020, { type ErrorObject } from "ajv/dist/2020";
import addFormats from "ajv-formats";

const DOCUMENT_ID = "https://contract.invalid/openapi.json";

/** Top-level OpenAPI fields: annotations to Ajv, so that strict mode accepts the document as a schema root. */
const OPENAPI_FIELDS = [
  "openapi",
  "info",
  "jsonSchemaDialect",
  "servers",
  "paths",
  "webhooks",
  "components",
  "security",
  "tags",
  "externalDocs",
];
/** OpenAPI's own annotation keywords inside schemas. */
const OPENAPI_SCHEMA_KEYWORDS = ["example", "discriminator", "xml", "externalDocs"];

export type Document = Record<string, unknown>;

/** `/api/v1/orders` → `~1api~1v1~1orders` (RFC 6901). */
export function pointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function pointer(...tokens: string[]): string {
  return tokens.map((t) => `/${pointerToken(t)}`).join("");
}

/** The value at a JSON pointer of the document. */
export function at(document: Document, jsonPointer: string): unknown {
  let node: unknown = document;
  for (const raw of jsonPointer.split("/").slice(1)) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[token] : undefined;
  }
  return node;
}

/** Follows `$ref` (local ones) until an object that is not a reference; returns it and its pointer. */
export function dereference(
  document: Document,
  jsonPointer: string,
): { node: Record<string, unknown>; pointer: string } {
  let current = jsonPointer;
  for (let hops = 0; hops < 20; hops++) {
    const node = at(document, current);
    if (typeof node !== "object" || node === null) throw new Error(`Nothing at ${current} in the OpenAPI document.`);
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref !== "string") return { node: node as Record<string, unknown>, pointer: current };
    if (!ref.startsWith("#/")) throw new Error(`Only local references are supported, got ${ref}.`);
    current = ref.slice(1);
  }
  throw new Error(`Reference loop at ${jsonPointer}.`);
}

export function describeErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const where = e.instancePath || "(root)";
    const extra =
      e.keyword === "additionalProperties"
        ? ` "${String((e.params as { additionalProperty?: string }).additionalProperty)}"`
        : "";
    return `${where} ${e.message ?? e.keyword}${extra}`;
  });
}

export class DocumentSchemas {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ReturnType<Ajv2020["compile"]>>();

  /** `strict`: refuse unknown keywords and loose types in the schemas (used by the document's own test). */
  constructor(
    readonly document: Document,
    { strict = false } = {},
  ) {
    this.ajv = new Ajv2020({ strict, allowUnionTypes: true, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    for (const keyword of new Set([...OPENAPI_FIELDS, ...OPENAPI_SCHEMA_KEYWORDS])) {
      if (!this.ajv.getKeyword(keyword)) this.ajv.addKeyword({ keyword });
    }
    this.ajv.addSchema(document, DOCUMENT_ID);
  }

  /** Errors of `value` against the schema at `jsonPointer` (empty when valid). */
  validate(jsonPointer: string, value: unknown): string[] {
    let validate = this.compiled.get(jsonPointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}#${jsonPointer}` });
      this.compiled.set(jsonPointer, validate);
    }
    return validate(value) ? [] : describeErrors(validate.errors);
  }
}
