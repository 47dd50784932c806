/**
 * The operations of the published OpenAPI document, read once into what request generators
 * need: the scope an operation requires, its parameters with their schemas, the schema of its
 * JSON body and the fields of that body that name another record.
 */
import { dereference, pointer, type Document } from "./openapi-schemas";
import { resolve } from "./schema-arbitrary";

type Schema = Record<string, unknown>;
const METHODS = ["get", "put", "post", "delete", "patch"];

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
  /** JSON pointer of the schema in the document (for Ajv). */
  schemaAt: string;
}

export interface Operation {
  /** "POST /api/v1/orders/{id}/validate", as Contract.operations() names it. */
  key: string;
  method: string;
  template: string;
  /** `x-required-scope`; null for an operation open to anyone (`security: []`). */
  scope: string | null;
  parameters: Parameter[];
  body: { schema: Schema; schemaAt: string; required: boolean; mediaType: string } | null;
}

export function operationsOf(document: Document): Operation[] {
  const paths = document.paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([template, item]) =>
    Object.keys(item)
      .filter((m) => METHODS.includes(m))
      .map((method) => operation(document, template, method)),
  );
}

function operation(document: Document, template: string, method: string): Operation {
  const opAt = pointer("paths", template, method);
  const { node: op } = dereference(document, opAt);
  const open = Array.isArray(op.security) && op.security.length === 0;
  const listed = [
    ...((dereference(document, pointer("paths", template)).node.parameters ?? []) as unknown[]).map((_, i) =>
      pointer("paths", template, "parameters", String(i)),
    ),
    ...((op.parameters ?? []) as unknown[]).map((_, i) => `${opAt}${pointer("parameters", String(i))}`),
  ];
  const parameters = listed
    .map((at) => {
      const { node, pointer: paramAt } = dereference(document, at);
      return {
        name: String(node.name),
        in: node.in as Parameter["in"],
        required: node.required === true,
        schema: resolve(document, node.schema as Schema),
        schemaAt: `${paramAt}/schema`,
      };
    })
    .filter((p) => p.in !== "header" || !/^(authorization|content-type|accept)$/i.test(p.name));

  let body: Operation["body"] = null;
  if (op.requestBody) {
    const { node: requestBody, pointer: bodyAt } = dereference(document, `${opAt}/requestBody`);
    const content = (requestBody.content ?? {}) as Record<string, unknown>;
    // An NDJSON body (POST /order_imports) is drawn as one line: its schema is each line's.
    const mediaType = ["application/json", "application/x-ndjson"].find((type) => type in content);
    if (!mediaType) throw new Error(`${method.toUpperCase()} ${template}: only JSON and NDJSON bodies are generated`);
    const schemaAt = `${bodyAt}${pointer("content", mediaType, "schema")}`;
    body = {
      schema: dereference(document, schemaAt).node,
      schemaAt,
      required: requestBody.required === true,
      mediaType,
    };
  }
  const scope = typeof op["x-required-scope"] === "string" ? op["x-required-scope"] : null;
  if (!scope && !open)
    throw new Error(`${method.toUpperCase()} ${template} needs authentication but names no x-required-scope`);
  return {
    key: `${method.toUpperCase()} ${template}`,
    method: method.toUpperCase(),
    template,
    scope,
    parameters,
    body,
  };
}

/** The collection a path parameter names: the segment before it (`/webhooks/{id}/deliveries/{deliveryId}` → webhooks, deliveries). */
export function collectionOfParameter(template: string, name: string): string {
  const segments = template.split("/");
  const i = segments.indexOf(`{${name}}`);
  return segments[i - 1];
}

/** The collection an operation belongs to: the first segment after /api/v1 (`/webhooks/available` → webhooks). */
export function collectionOf(template: string): string {
  return template
    .replace(/^\/api\/v\d+\//, "")
    .replace(/^\//, "")
    .split("/")[0];
}

/** What a list without path parameters lists: its last segment (`/webhooks/deliveries` → deliveries, `/orders` → orders). */
export function listedCollectionOf(template: string): string {
  return template.split("/").at(-1) ?? "";
}

export function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(values[name]);
  });
}

/** A field of a body, as a path through its objects and arrays ("items[].internalReferenceId"). */
export interface BodyField {
  path: string;
  /** The names of the path: ["items", "[]", "internalReferenceId"]. */
  steps: string[];
  schema: Schema;
}

/** Every field of a body schema, through $ref, oneOf/anyOf branches and array items. */
export function fieldsOf(document: Document, schema: Schema, steps: string[] = []): BodyField[] {
  const s = resolve(document, schema);
  const branches = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (branches)
    return branches.flatMap((b) =>
      fieldsOf(document, { ...s, oneOf: undefined, anyOf: undefined, ...resolve(document, b) }, steps),
    );
  if (s.type === "array" && s.items) return fieldsOf(document, s.items as Schema, [...steps, "[]"]);
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  return Object.entries(properties).flatMap(([name, p]) => {
    const here = [...steps, name];
    const field: BodyField = {
      path: here.join(".").replace(/\.\[\]/g, "[]"),
      steps: here,
      schema: resolve(document, p),
    };
    return [field, ...fieldsOf(document, p, here)];
  });
}

/** A field whose name says it names another record: `id`, `…Id`, `packaging`. */
export const RECORD_NAME = /^(id|packaging)$|Id$/;

export function namesARecord(field: BodyField): boolean {
  return RECORD_NAME.test(field.steps[field.steps.length - 1]);
}
