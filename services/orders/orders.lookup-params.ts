/**
 * The query parameters GET /api/v1/orders looks orders up by (docs/api.md): a partner's own
 * externalId / externalReference, the order's code, time ranges in ISO 8601, and the direction.
 */
import { identifier, optional, type Rule } from "../../shared/http/params";
import type { Typed } from "../../shared/schema-types";
import { NOT_OURS, parseOrdersCursor } from "./orders.lookup-cursor";

type Errors = { type: string; actual: unknown; message?: string }[];

/** A day that exists in the years 1000 to 9999 (PostgreSQL has no year 0): month lengths and leap years. */
const DAY =
  "[1-9]\\d{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)" +
  "|(?:[1-9]\\d(?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26])00)-02-29";
/** A date (midnight UTC), or a date and time with seconds optional, fractions up to microseconds, and a zone. */
const ISO_8601 = new RegExp(
  `^(${DAY})(?:T((?:[01]\\d|2[0-3]):[0-5]\\d)(?::([0-5]\\d)(?:\\.(\\d{1,6}))?)?(Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d))?$`,
);

/**
 * The instant an ISO 8601 text names, in UTC to the microsecond as PostgreSQL keeps times (a
 * millisecond would move an exclusive bound), or null when it names none.
 */
export function parseInstant(text: string): string | null {
  const match = ISO_8601.exec(text);
  if (!match) return null;
  const [, day, minute = "00:00", second = "00", fraction = "", zone = "Z"] = match;
  const ms = Date.parse(`${day}T${minute}:${second}${zone}`);
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 31 February over into March: the day and time must read back as written.
  const sign = zone[0] === "-" ? -1 : 1;
  const offset = zone === "Z" ? 0 : sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4)));
  if (new Date(ms + offset * 60_000).toISOString().slice(0, 19) !== `${day}T${minute}:${second}`) return null;
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction.padEnd(6, "0")}Z`;
}

const instant = (description: string): Rule & Typed<string> & { optional: true } =>
  optional({
    type: "any",
    custom: (value: unknown, errors: Errors) => {
      const at = typeof value === "string" ? parseInstant(value) : null;
      if (at !== null) return at;
      errors.push({
        type: "instant",
        actual: value,
        message:
          "The '{field}' field must be an ISO 8601 date (2026-11-27) or date and time with its zone (2026-11-27T09:30:00Z).",
      });
      return value;
    },
    jsonSchema: {
      type: "string",
      // 2026-11-27T09:30:00.123456+00:00, the longest the pattern takes.
      maxLength: 32,
      pattern: ISO_8601.source,
      description: `${description} ISO 8601: a date (midnight UTC) or a date and time with its zone; read to the microsecond.`,
    },
  });

/** A partner's own identifier or a code, matched exactly: whitespace at either end is 422, as in bodies. */
const exactText = (description: string) => optional({ ...identifier(100), jsonSchemaAlso: { description } });

export const lookupParams = {
  // The paging cursor, in either of the two orders a page may be in (orders.lookup-cursor.ts).
  cursor: optional({
    type: "string",
    min: 1,
    max: 200,
    custom: (value: unknown, errors: Errors) => {
      if (typeof value === "string" && parseOrdersCursor(value) === null)
        errors.push({ type: "cursor", actual: value, message: NOT_OURS });
      return value;
    },
    jsonSchemaAlso: {
      pattern: "^[A-Za-z0-9_-]+$",
      description: 'Opaque: the `cursor` of a `Link: rel="next"` URL, as given.',
    },
  }),
  externalId: exactText("Orders whose externalId (the partner's own order id) is exactly this."),
  externalReference: exactText("Orders whose externalReference is exactly this."),
  code: exactText("The order with this code (ORD-YYYYMMDD-NNNNNN)."),
  createdSince: instant("Orders created at or after this instant; the page is then in creation order."),
  createdUntil: instant("Orders created before this instant; the page is then in creation order."),
  updatedSince: instant(
    "Orders changed (created, validated, cancelled) at or after this instant; the page is then in order of the last change.",
  ),
  order: optional({
    type: "enum",
    values: ["asc", "desc"],
    jsonSchemaAlso: { default: "asc", description: "asc: oldest first (the default); desc: newest first." },
  }),
} as const;
