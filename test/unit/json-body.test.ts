/**
 * The parser rules on their own, with generated inputs: whatever JSON a client sends, a
 * prototype key at any depth, an unstorable string anywhere or nesting past the limit is
 * refused naming its path, and no parsed value ever has a prototype other than Object's or
 * Array's.
 */
import fc from "fast-check";
import { InvalidInputError, MalformedRequestError } from "../../shared/errors";
import { JSON_LIMITS, parseJsonBody } from "../../shared/http/json-body";
import { MAX_REPORTED_PROBLEMS } from "../../shared/http/problem";
import { startingWith } from "../helpers/matchers";
import { hasPrototypeKey } from "../helpers/prototype-keys";

// Every name a key could use to reach, replace or shadow a prototype member (a {"toString": ""} element made a validator throw).
const FORBIDDEN = ["prototype", ...Object.getOwnPropertyNames(Object.prototype)];

function refusal(text: string): { paths: string[]; errorCount?: number } {
  try {
    parseJsonBody(Buffer.from(text));
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    const data = (err as InvalidInputError).data as { errors: { path: string }[]; errorCount?: number };
    return { paths: data.errors.map((e) => e.path), errorCount: data.errorCount };
  }
  throw new Error(`accepted: ${text.slice(0, 200)}`);
}

/** The paths of the objects and arrays of a parsed value whose prototype is not the ordinary one. */
function unusualPrototypes(value: unknown, path = "$"): string[] {
  if (typeof value !== "object" || value === null) return [];
  const proto = Object.getPrototypeOf(value);
  const here = proto === Object.prototype || proto === Array.prototype ? [] : [path];
  return [...here, ...Object.entries(value).flatMap(([key, inner]) => unusualPrototypes(inner, `${path}.${key}`))];
}

const safeKey = fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/);

describe("parseJsonBody", () => {
  it("when a generated JSON value holds no forbidden key or string, then it is accepted as is", () => {
    fc.assert(
      fc.property(
        fc
          .jsonValue({ maxDepth: 5 })
          .filter((v) => !hasPrototypeKey(v) && !/\\u0000|\\ud[89a-f]/i.test(JSON.stringify(v))),
        (value) => {
          const parsed = parseJsonBody(Buffer.from(JSON.stringify(value)));
          expect(parsed).toEqual(JSON.parse(JSON.stringify(value)));
          expect(unusualPrototypes(parsed)).toEqual([]);
        },
      ),
      { numRuns: 300, seed: 1 },
    );
  });

  it("when __proto__, constructor, prototype or another Object.prototype name (toString…) stands at a random depth, then it is refused naming that path", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(safeKey, fc.nat({ max: 2 })), { maxLength: 8 }),
        fc.constantFrom(...FORBIDDEN),
        fc.jsonValue({ maxDepth: 2 }),
        (steps, key, value) => {
          let text = `{${JSON.stringify(key)}:${JSON.stringify(value)}}`;
          let path = key;
          for (const step of [...steps].reverse()) {
            if (typeof step === "number") {
              text = `[${"0,".repeat(step)}${text}]`;
              path = `[${step}]${path.startsWith("[") ? "" : "."}${path}`;
            } else {
              text = `{${JSON.stringify(step)}:${text}}`;
              path = `${step}${path.startsWith("[") ? "" : "."}${path}`;
            }
          }
          if (path.startsWith("[")) path = path.replace(/^\[(\d+)\]\./, "[$1].");
          expect(refusal(text).paths).toContain(path.replace(/^\./, ""));
        },
      ),
      { numRuns: 300, seed: 2 },
    );
  });

  it("when a string value or key holds NUL or a lone surrogate, then it is refused naming the field", () => {
    const bad = fc.oneof(
      fc.constant("\\u0000"),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => `\\u${c.toString(16)}`),
    );
    fc.assert(
      fc.property(safeKey, fc.string({ maxLength: 8 }), bad, fc.boolean(), (field, around, escape, asKey) => {
        // Raw JSON text with the escape, so that the surrogate stays lone whatever `around` holds.
        const s = `"${JSON.stringify(around).slice(1, -1)}${escape}x"`;
        const text = asKey ? `{"a":{${s}:1}}` : `{"a":{${JSON.stringify(field)}:${s}}}`;
        const { paths } = refusal(text);
        expect(paths).toEqual([startingWith(asKey ? "a." : `a.${field}`)]);
      }),
      { numRuns: 300, seed: 3 },
    );
  });

  it("when a surrogate pair is well formed, then it is accepted", () => {
    expect(parseJsonBody(Buffer.from('{"a":"\\ud83d\\ude00"}'))).toEqual({ a: "😀" });
  });

  it("when nesting goes past the limit, then it is refused; at the limit it is accepted", () => {
    const nest = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;
    expect(parseJsonBody(Buffer.from(nest(JSON_LIMITS.maxDepth)))).toBeDefined();
    expect(refusal(nest(JSON_LIMITS.maxDepth + 1)).paths).toHaveLength(1);
    expect(refusal(nest(100_000)).paths).toHaveLength(1);
  });

  it("when there are thousands of problems, then at most 50 are listed and all are counted", () => {
    const text = JSON.stringify(Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`k${i}`, "\u0000"])));
    const { paths, errorCount } = refusal(text);
    expect(paths).toHaveLength(MAX_REPORTED_PROBLEMS);
    expect(errorCount).toBe(900);
  });

  it("when the bytes are not UTF-8 or not JSON, then it is a 400 malformed request", () => {
    expect(() => parseJsonBody(Buffer.from([0x22, 0xc3, 0x28, 0x22]))).toThrow(MalformedRequestError);
    expect(() => parseJsonBody(Buffer.from("{"))).toThrow(MalformedRequestError);
  });
});
