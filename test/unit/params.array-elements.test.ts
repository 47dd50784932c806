/**
 * Every array of objects in every service's params file names the bad element itself
 * (`items[3]`), never only the array, whatever stands there: null, a number, a string, an
 * array. Fields are found by walking the schemas, so a new params file or field is covered.
 */
import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import Validator from "fastest-validator";
import { fieldErrorsFromValidator } from "../../shared/http/problem";
import { hasPrototypeKey } from "../helpers/prototype-keys";

type Rule = Record<string, unknown>;
type Check = (value: object) => true | unknown[];

const SERVICES = path.resolve(__dirname, "../../services");
/** Compiled as the broker compiles (moleculer.config.ts). */
const validator = new Validator({ useNewCustomCheckerFunction: true });

interface ArrayField {
  schemaName: string;
  schema: Rule;
  /** Its place in the params, `contact.lines` for a nested one. */
  path: string;
  maxLength: number;
}

function isRule(value: unknown): value is Rule {
  return (
    typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Rule).type === "string"
  );
}

/** Arrays of objects among these properties, and inside their objects (not inside array elements). */
function arrayFieldsOf(props: Rule, prefix: string): { path: string; rule: Rule }[] {
  return Object.entries(props).flatMap(([name, rule]) => {
    if (!isRule(rule)) return [];
    const here = prefix ? `${prefix}.${name}` : name;
    if (rule.type === "array" && isRule(rule.items) && rule.items.type === "object") return [{ path: here, rule }];
    if (rule.type === "object" && rule.props) return arrayFieldsOf(rule.props as Rule, here);
    return [];
  });
}

async function allArrayFields(): Promise<ArrayField[]> {
  const files = fs.readdirSync(SERVICES).flatMap((service) =>
    fs
      .readdirSync(path.join(SERVICES, service))
      .filter((f) => f.endsWith(".params.ts"))
      .map((f) => path.join(SERVICES, service, f)),
  );
  const found: ArrayField[] = [];
  for (const file of files) {
    const exports = (await import(file)) as Record<string, unknown>;
    for (const [name, schema] of Object.entries(exports)) {
      if (typeof schema !== "object" || schema === null || !name.endsWith("Params")) continue;
      for (const field of arrayFieldsOf(schema as Rule, "")) {
        found.push({
          schemaName: `${path.basename(file)} ${name}`,
          schema: schema as Rule,
          path: field.path,
          maxLength: Number(field.rule.max ?? 50),
        });
      }
    }
  }
  return found;
}

/** `{ a: { b: value } }` for `a.b`. */
function placed(fieldPath: string, value: unknown): object {
  return fieldPath.split(".").reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as object;
}

// JSON values only, as the gateway's parser hands them on: it refuses keys named like
// Object.prototype members (shared/http/json-body.ts), so none of those reach a validator.
const notAnObject = fc.oneof(
  fc.constant(null),
  fc.double(),
  fc.integer(),
  fc.string(),
  fc.array(
    fc.jsonValue().filter((v) => !hasPrototypeKey(v)),
    { maxLength: 3 },
  ),
);

let fields: ArrayField[];
beforeAll(async () => {
  fields = await allArrayFields();
});

it("when the params files are walked, then the arrays of objects of orders, catalogue and references are among those found", () => {
  expect(fields.map((f) => `${f.schemaName} ${f.path}`)).toEqual(
    expect.arrayContaining([
      "orders.params.ts createOrderParams items",
      "catalogue.params.ts createProductParams taxes",
      "references.params.ts resolvePackagingsParams refs",
      "references.params.ts resolveOrdersParams refs",
    ]),
  );
});

it("when any element of any array of objects is null, a number, a string or an array, then an error names that element's index and none names only the array", () => {
  const checks = new Map(fields.map((f) => [f, validator.compile(f.schema) as Check]));
  const scenario = fc.record({
    field: fc.constantFrom(...fields),
    length: fc.integer({ min: 1, max: 20 }),
    badValues: fc.array(notAnObject, { minLength: 1, maxLength: 3 }),
    seed: fc.nat(),
  });
  fc.assert(
    fc.property(scenario, ({ field, length, badValues, seed }) => {
      const size = Math.min(length, field.maxLength);
      const elements: unknown[] = Array.from({ length: size }, () => ({}));
      const badIndexes = new Set(badValues.map((_, k) => (seed + k * 7) % size));
      [...badIndexes].forEach((i, k) => (elements[i] = badValues[k]));

      const result = checks.get(field)!(placed(field.path, elements));
      expect(result).not.toBe(true);
      const paths = fieldErrorsFromValidator(result).map((e) => e.path);
      for (const i of badIndexes) expect(paths).toContain(`${field.path}[${i}]`);
      expect(paths).not.toContain(field.path);
    }),
    { numRuns: 300 },
  );
});
