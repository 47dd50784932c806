/**
 * The fastest-validator → JSON Schema converter: for each rule type the project uses, the
 * converted schema (checked by Ajv, draft 2020-12) accepts and refuses the same values as
 * fastest-validator itself.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import Validator from "fastest-validator";
import {
  convertParams,
  convertRule,
  UnsupportedRuleError,
  type FvSchema,
} from "../../gateway/openapi/fastest-to-json-schema";

const fastest = new Validator({ useNewCustomCheckerFunction: true });
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
addFormats(ajv);

interface Case {
  name: string;
  rule: unknown;
  valid: unknown[];
  invalid: unknown[];
}

const CASES: Case[] = [
  {
    name: "string min/max",
    rule: { type: "string", min: 2, max: 4 },
    valid: ["ab", "abcd"],
    invalid: ["a", "abcde", 3, null],
  },
  {
    name: "string pattern (RegExp)",
    rule: { type: "string", pattern: /^[A-Z]{2}$/ },
    valid: ["FR"],
    invalid: ["fr", "FRA"],
  },
  { name: "string pattern (text)", rule: { type: "string", pattern: "^\\d+$" }, valid: ["123"], invalid: ["12a"] },
  { name: "string not empty", rule: { type: "string", empty: false }, valid: ["x"], invalid: [""] },
  { name: "string trimmed", rule: { type: "string", trim: true, min: 1, max: 5 }, valid: ["abc"], invalid: ["", 1] },
  {
    name: "email",
    rule: { type: "email", max: 30 },
    valid: ["ada@example.com"],
    invalid: ["ada", "ada@", `${"a".repeat(30)}@example.com`],
  },
  {
    name: "url",
    rule: { type: "url" },
    valid: ["https://example.com/hook", "http://localhost:8080/x"],
    invalid: ["ftp://example.com", "example.com"],
  },
  { name: "integer", rule: { type: "number", integer: true }, valid: [0, -3, 42], invalid: [1.5, "1", null] },
  { name: "number min/max", rule: { type: "number", min: 0, max: 100 }, valid: [0, 12.5, 100], invalid: [-0.1, 100.1] },
  { name: "positive number", rule: { type: "number", positive: true }, valid: [0.001, 5], invalid: [0, -1] },
  { name: "boolean", rule: { type: "boolean" }, valid: [true, false], invalid: ["true", 1] },
  {
    name: "enum",
    rule: { type: "enum", values: ["pending", "validated"] },
    valid: ["pending"],
    invalid: ["PENDING", "cancelled"],
  },
  { name: "equal", rule: { type: "equal", value: "yes", strict: true }, valid: ["yes"], invalid: ["no"] },
  {
    name: "array items/min/max/unique",
    rule: { type: "array", min: 1, max: 3, unique: true, items: { type: "number", integer: true } },
    valid: [[1], [1, 2, 3]],
    invalid: [[], [1, 2, 3, 4], [1, 1], ["1"]],
  },
  {
    name: "strict object",
    rule: { type: "object", strict: true, props: { a: { type: "string" }, b: { type: "number", optional: true } } },
    valid: [{ a: "x" }, { a: "x", b: 1 }],
    invalid: [{}, { a: "x", c: 1 }, { a: 1 }, []],
  },
  {
    name: "lenient object",
    rule: { type: "object", props: { a: { type: "string" } } },
    valid: [{ a: "x", other: true }],
    invalid: [{ other: true }],
  },
  {
    name: "multi",
    rule: { type: "multi", rules: [{ type: "number" }, { type: "string", min: 2 }] },
    valid: [1, "ab"],
    invalid: ["a", true],
  },
  { name: "array form of multi", rule: [{ type: "boolean" }, { type: "number" }], valid: [true, 2], invalid: ["x"] },
  { name: "nullable", rule: { type: "string", nullable: true }, valid: ["x", null], invalid: [1] },
  { name: "shorthand", rule: "string|min:3", valid: ["abc"], invalid: ["ab"] },
];

function fastestAccepts(schema: FvSchema, value: unknown): boolean {
  return fastest.validate({ v: value }, schema) === true;
}

describe("fastest-validator → JSON Schema", () => {
  it.each(CASES.map((c) => [c.name, c] as const))(
    "when a %s rule is converted, then Ajv and fastest-validator agree on every sample",
    (_name, c) => {
      const schema: FvSchema = { $$strict: true, v: c.rule };
      const check = ajv.compile(convertParams(schema));
      for (const value of c.valid) {
        expect({ value, fastest: fastestAccepts(schema, value), ajv: check({ v: value }) }).toEqual({
          value,
          fastest: true,
          ajv: true,
        });
      }
      for (const value of c.invalid) {
        expect({ value, fastest: fastestAccepts(schema, value), ajv: check({ v: value }) }).toEqual({
          value,
          fastest: false,
          ajv: false,
        });
      }
    },
  );

  it("when the root is $$strict, then unknown fields are refused and optional ones may be left out", () => {
    const schema = convertParams({ $$strict: true, a: { type: "string" }, b: { type: "string", optional: true } });
    expect(schema).toEqual({
      type: "object",
      properties: { a: { type: "string" }, b: { type: "string" } },
      required: ["a"],
      additionalProperties: false,
    });
  });

  it("when the root is not strict, then unknown fields are allowed", () => {
    expect(convertParams({ a: { type: "string" } })).not.toHaveProperty("additionalProperties");
  });

  it("when a field has a default, then it is optional and the default is documented", () => {
    expect(convertParams({ n: { type: "number", default: 50 } })).toEqual({
      type: "object",
      properties: { n: { type: "number", default: 50 } },
    });
  });

  it("when a rule type or option is unknown to the converter, then it says which, instead of documenting nothing", () => {
    expect(() => convertRule({ type: "currency" }, "price")).toThrow(
      new UnsupportedRuleError("price", 'type "currency"'),
    );
    expect(() => convertParams({ items: { type: "array", items: { type: "string", singleLine: true } } })).toThrow(
      /items\[\].*singleLine/,
    );
  });

  it("when sanitisers are used, then they leave the schema as if they were not there", () => {
    expect(convertRule({ type: "string", trim: true, convert: true, lowercase: true, max: 3 })).toEqual({
      type: "string",
      maxLength: 3,
    });
    expect(convertRule({ type: "email", normalize: true })).toEqual({ type: "string", format: "email" });
  });
});
