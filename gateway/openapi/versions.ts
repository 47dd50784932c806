/**
 * What the document says of versioned entities (shared/http/conditional.ts): `ETag` on their
 * answers, `If-None-Match` and 304 on their reads, `If-Match` and 412 on their changes. Which
 * operations are which is said once, in outcomes.ts (`versioned`).
 */
import { ENTITY_TAGS_MAX_LENGTH, ENTITY_TAGS_PATTERN } from "../../shared/http/conditional";
import { ref } from "./components";
import { rateLimitHeaders } from "./rate-limit-headers";

/** read: GET of one entity; change: an action that changes one; create: one that only creates one. */
export type Versioned = "read" | "change" | "create";

const TAGS_SCHEMA = { type: "string", maxLength: ENTITY_TAGS_MAX_LENGTH, pattern: ENTITY_TAGS_PATTERN } as const;

export const VERSION_HEADERS = {
  ETag: {
    description:
      'The version of the entity in this answer, as a strong entity tag: `"3"` is `version` 3 of the body. Send it back in `If-None-Match` (reads) or `If-Match` (changes).',
    required: true,
    schema: { type: "string", maxLength: 17, pattern: '^"[1-9][0-9]{0,14}"$' },
  },
} as const;

export const VERSION_PARAMETERS = {
  IfNoneMatch: {
    name: "If-None-Match",
    in: "header",
    required: false,
    description:
      'On a read: the `ETag`s of the copies you hold (`"3"`, `W/"3"`, a comma-separated list, or `*`); when one is the current version the answer is 304 with no body. ' +
      "On a change: 412 when it names the current version (`*`: when the entity exists already, so `If-None-Match: *` creates only). A malformed value is 400 naming the header.",
    schema: TAGS_SCHEMA,
  },
  IfMatch: {
    name: "If-Match",
    in: "header",
    required: false,
    description:
      'Change only if the entity is at one of these versions (`"3"`, a comma-separated list, or `*`: if it exists); else 412 naming `currentVersion`, and nothing is changed. ' +
      'Compared strongly (RFC 9110): a weak tag (`W/"3"`) never matches. Checked atomically with the change: of two requests naming the same version, one is made and the other is 412. A malformed value is 400 naming the header.',
    schema: TAGS_SCHEMA,
  },
} as const;

const PRECONDITION_FAILED = "PreconditionFailed";

/** The answers of conditional requests (304, 412), for `#/components/responses`. */
export function versionResponseComponents(): Record<string, unknown> {
  return {
    NotModified: {
      description: "Not modified: the version named in `If-None-Match` is the current one. No body.",
      headers: {
        "X-Request-ID": ref("headers", "RequestId"),
        ETag: ref("headers", "ETag"),
        ...rateLimitHeaders("checked"),
      },
    },
    [PRECONDITION_FAILED]: {
      description:
        "`If-Match` (or `If-None-Match`) does not hold (`/problems/precondition-failed`): the entity is at another version, the problem's `currentVersion` (null when it does not exist). Nothing was changed; read it again before deciding.",
      headers: { "X-Request-ID": ref("headers", "RequestId"), ...rateLimitHeaders("checked") },
      content: { "application/problem+json": { schema: ref("schemas", "Problem") } },
    },
  };
}

/** What a versioned operation adds: its header parameters, its success answers' headers and its extra answers. */
export function versionedParts(versioned: Versioned | undefined): {
  parameters: Record<string, unknown>[];
  successHeaders: Record<string, unknown>;
  responses: Record<string, unknown>;
} {
  if (!versioned) return { parameters: [], successHeaders: {}, responses: {} };
  const successHeaders = { ETag: ref("headers", "ETag") };
  if (versioned === "create") return { parameters: [], successHeaders, responses: {} };
  if (versioned === "read")
    return {
      parameters: [ref("parameters", "IfNoneMatch")],
      successHeaders,
      responses: { "304": ref("responses", "NotModified") },
    };
  return {
    parameters: [ref("parameters", "IfMatch"), ref("parameters", "IfNoneMatch")],
    successHeaders,
    responses: { "412": ref("responses", PRECONDITION_FAILED) },
  };
}
