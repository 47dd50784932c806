/**
 * Generated spellings of ids, for the tests of the one id grammar (shared/http/params.ts): in
 * paths, in query strings and in the strings of a body alike.
 */
import fc from "fast-check";
import { INT_ID_MAX } from "../../shared/http/params";

/** The canonical decimal spelling of an id in 1 … max. */
export const canonical = (max: number) => fc.integer({ min: 1, max }).map(String);

/** Whitespace of every kind JavaScript's `\s` (and String.prototype.trim) knows, ASCII or not. */
export const whitespace = fc.constantFrom(" ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u2028", "\u3000", "\ufeff");

/** Texts that are not the canonical decimal spelling of an id in 1 … INT_ID_MAX. */
export const notAnId = fc.oneof(
  fc.constantFrom(
    "0x10",
    " 1",
    "1 ",
    "1e3",
    "+1",
    "01",
    "-1",
    "1.0",
    "",
    "１",
    "0",
    "2147483648",
    "Infinity",
    "NaN",
    "1_000",
  ),
  fc
    .integer({ min: 1, max: INT_ID_MAX })
    .chain((n) =>
      fc.constantFrom(`0${n}`, `+${n}`, `${n}.0`, `${n} `, ` ${n}`, `-${n}`, `0x${n.toString(16)}`, `${n}e0`),
    ),
  fc.integer({ min: INT_ID_MAX + 1, max: Number.MAX_SAFE_INTEGER }).map(String),
  fc.string().filter((s) => !/^[1-9][0-9]*$/.test(s)),
);

/** An id's digits with whitespace before, after or both: what a trim would have read as the id. */
export const paddedId = fc
  .tuple(
    canonical(INT_ID_MAX),
    fc.array(whitespace, { maxLength: 3 }).map((w) => w.join("")),
    fc.array(whitespace, { maxLength: 3 }).map((w) => w.join("")),
  )
  .filter(([, before, after]) => before.length + after.length > 0)
  .map(([digits, before, after]) => `${before}${digits}${after}`);
