/**
 * Entity tags and preconditions (shared/http/conditional.ts, RFC 9110 §8.8.3 and §13.1): what
 * the gateway accepts in If-Match / If-None-Match, and how a version is compared with them.
 */
import { PreconditionFailedError } from "../../shared/errors";
import {
  ENTITY_TAGS_MAX_LENGTH,
  ENTITY_TAGS_PATTERN,
  isNotModified,
  parseEntityTags,
  requirePreconditions,
  versionOfTag,
  versionTag,
  type Preconditions,
} from "../../shared/http/conditional";
import { toProblem } from "../../shared/http/problem";

const parse = (value: string) => parseEntityTags(value, "If-Match");

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (err) {
    return toProblem(err);
  }
  throw new Error("expected a refusal");
};

describe("parsing If-Match and If-None-Match", () => {
  it("when a header holds a strong tag, a weak tag, a list or *, then each is read", () => {
    expect(parse('"3"')).toEqual([{ weak: false, opaque: "3" }]);
    expect(parse('W/"3"')).toEqual([{ weak: true, opaque: "3" }]);
    expect(parse(' "1" ,W/"2",  "x-y" ')).toEqual([
      { weak: false, opaque: "1" },
      { weak: true, opaque: "2" },
      { weak: false, opaque: "x-y" },
    ]);
    expect(parse("*")).toBe("*");
    expect(parse('""')).toEqual([{ weak: false, opaque: "" }]);
  });

  it("when a list holds empty elements, then they are skipped (RFC 9110 §5.6.1.2)", () => {
    expect(parse(', "1",, "2" ,')).toEqual([
      { weak: false, opaque: "1" },
      { weak: false, opaque: "2" },
    ]);
  });

  it.each([
    ["an unquoted version", "3"],
    ["a lower-case weak prefix", 'w/"3"'],
    ["* inside a list", '*, "3"'],
    ["two tags without a comma", '"1" "2"'],
    ["a quote inside a tag", '"a"b"'],
    ["only commas", " , ,"],
    ["nothing", ""],
    ["a tag too long", `"${"1".repeat(ENTITY_TAGS_MAX_LENGTH)}"`],
  ])("when a header holds %s, then it is 400 naming the header", (_what, value) => {
    const problem = refusal(() => parseEntityTags(value, "If-None-Match"));
    expect(problem.status).toBe(400);
    expect(problem.body.errors).toEqual([{ path: "If-None-Match", message: expect.any(String) }]);
  });

  it("when the OpenAPI pattern is applied, then it accepts exactly what the parser accepts", () => {
    const pattern = new RegExp(ENTITY_TAGS_PATTERN);
    for (const value of ['"3"', 'W/"3"', "*", ' "1", W/"2" ', ',"1",,', "3", '*,"1"', '"1" "2"', ""]) {
      let parsed = true;
      try {
        parse(value);
      } catch {
        parsed = false;
      }
      expect([value, pattern.test(value)]).toEqual([value, parsed]);
    }
  });
});

describe("comparing versions", () => {
  const p = (header: Partial<Record<"ifMatch" | "ifNoneMatch", string>>): Preconditions => ({
    ...(header.ifMatch !== undefined ? { ifMatch: parse(header.ifMatch) } : {}),
    ...(header.ifNoneMatch !== undefined ? { ifNoneMatch: parse(header.ifNoneMatch) } : {}),
  });
  const holds = (preconditions: Preconditions, version: number | null) => {
    try {
      requirePreconditions(preconditions, "order", version);
      return true;
    } catch (err) {
      expect(err).toBeInstanceOf(PreconditionFailedError);
      return false;
    }
  };

  it("when If-Match names the current version, alone or in a list, or is *, then the change may go on", () => {
    expect(holds(p({ ifMatch: '"2"' }), 2)).toBe(true);
    expect(holds(p({ ifMatch: '"1", "2"' }), 2)).toBe(true);
    expect(holds(p({ ifMatch: "*" }), 2)).toBe(true);
    expect(holds({}, 2)).toBe(true);
  });

  it("when If-Match names another version, a weak tag, or anything while there is none, then it is 412", () => {
    expect(holds(p({ ifMatch: '"1"' }), 2)).toBe(false);
    expect(holds(p({ ifMatch: 'W/"2"' }), 2)).toBe(false);
    expect(holds(p({ ifMatch: "*" }), null)).toBe(false);
  });

  it("when a change's If-None-Match names the current version or is * on an existing entity, then it is 412", () => {
    expect(holds(p({ ifNoneMatch: 'W/"2"' }), 2)).toBe(false);
    expect(holds(p({ ifNoneMatch: "*" }), 2)).toBe(false);
    expect(holds(p({ ifNoneMatch: "*" }), null)).toBe(true);
    expect(holds(p({ ifNoneMatch: '"1"' }), 2)).toBe(true);
  });

  it("when a change is refused, then the problem is 412 /problems/precondition-failed with currentVersion", () => {
    const problem = refusal(() => requirePreconditions(p({ ifMatch: '"1"' }), "order", 3));
    expect(problem).toMatchObject({
      status: 412,
      body: { type: "/problems/precondition-failed", status: 412, currentVersion: 3 },
    });
  });

  it("when a read's If-None-Match names the version weakly or strongly, or is *, then it is not modified", () => {
    expect(isNotModified(p({ ifNoneMatch: '"4"' }), 4)).toBe(true);
    expect(isNotModified(p({ ifNoneMatch: 'W/"4"' }), 4)).toBe(true);
    expect(isNotModified(p({ ifNoneMatch: '"3", "4"' }), 4)).toBe(true);
    expect(isNotModified(p({ ifNoneMatch: "*" }), 4)).toBe(true);
    expect(isNotModified(p({ ifNoneMatch: '"3"' }), 4)).toBe(false);
    expect(isNotModified(p({ ifMatch: '"4"' }), 4)).toBe(false);
    expect(isNotModified(undefined, 4)).toBe(false);
  });

  it("when a version is written as a tag, then it reads back as the same version", () => {
    expect(versionTag(12)).toBe('"12"');
    expect(versionOfTag(versionTag(12))).toBe(12);
    expect(versionOfTag('W/"12"')).toBeNull();
    expect(versionOfTag(undefined)).toBeNull();
  });
});
