/**
 * Versions as entity tags, and conditional requests (RFC 9110 §8.8.3, §13): a versioned entity
 * (an order, a contact reference) answers `ETag: "<version>"`; `If-None-Match` on a read makes it
 * 304, `If-Match` (and `If-None-Match`) on a change make it 412 when the version moved on. The
 * gateway parses the two headers once for every route (gateway/conditional-headers.ts); an action
 * that changes a versioned entity checks them with `requirePreconditions` under the row lock its
 * change takes, so the check and the change are one step.
 */
import { MalformedRequestError, PreconditionFailedError } from "../errors";

/** One entity tag of a request header: `"3"` (strong) or `W/"3"` (weak). */
export interface EntityTag {
  weak: boolean;
  /** The quoted part, without the quotes. */
  opaque: string;
}

/** The value of `If-Match` or `If-None-Match`: `*` (any current version) or a list of tags. */
export type EntityTagList = "*" | EntityTag[];

/** The conditions of one request, as the gateway hands them to the action (ctx.meta.preconditions). */
export interface Preconditions {
  ifMatch?: EntityTagList;
  ifNoneMatch?: EntityTagList;
}

/** The request headers, with the names the problem document uses. */
export const IF_MATCH = "If-Match";
export const IF_NONE_MATCH = "If-None-Match";

/** RFC 9110 §8.8.3: an entity tag, weak or strong (etagc without obs-text: header values here are ASCII). */
const TAG = '(?:W/)?"[\\x21\\x23-\\x7e]*"';

/**
 * The whole header: `*`, or a list of tags that may hold empty elements (RFC 9110 §5.6.1.2).
 * The OpenAPI document states the same pattern and length, so what it allows is what is parsed.
 */
export const ENTITY_TAGS_PATTERN = `^(?:[ \\t]*\\*[ \\t]*|[ \\t,]*${TAG}(?:[ \\t]*,[ \\t,]*${TAG})*[ \\t,]*)$`;
export const ENTITY_TAGS_MAX_LENGTH = 1024;

const WHOLE_HEADER = new RegExp(ENTITY_TAGS_PATTERN);
const EACH_TAG = /(W\/)?"([^"]*)"/g;

/** Parses `*`, or a comma-separated list of entity tags; anything else is 400 naming the header. */
export function parseEntityTags(value: string, header: string): EntityTagList {
  if (value.length > ENTITY_TAGS_MAX_LENGTH || !WHOLE_HEADER.test(value))
    throw MalformedRequestError.header(
      header,
      `Must be \`*\` or a comma-separated list of entity tags such as \`"3"\` or \`W/"3"\` (at most ${ENTITY_TAGS_MAX_LENGTH} characters).`,
    );
  if (value.trim() === "*") return "*";
  return [...value.matchAll(EACH_TAG)].map((m) => ({ weak: m[1] !== undefined, opaque: m[2] }));
}

/** The strong entity tag of a version: `"3"`. */
export function versionTag(version: number): string {
  return `"${version}"`;
}

/**
 * Whether a list names the current version (null: there is none). Strong comparison for
 * If-Match (a weak tag never matches, RFC 9110 §13.1.1), weak for If-None-Match (§13.1.2).
 */
function names(list: EntityTagList, version: number | null, strong: boolean): boolean {
  if (version === null) return false;
  if (list === "*") return true;
  return list.some((tag) => tag.opaque === String(version) && !(strong && tag.weak));
}

/** The version an answer's `ETag` states (`"3"`), or null when it states none. */
export function versionOfTag(etag: string | undefined): number | null {
  const match = /^"(\d{1,15})"$/.exec(etag ?? "");
  return match ? Number(match[1]) : null;
}

/** A read's If-None-Match against the answer's version: true when the client's copy is current (answer 304). */
export function isNotModified(preconditions: Preconditions | undefined, version: number | null): boolean {
  return preconditions?.ifNoneMatch !== undefined && names(preconditions.ifNoneMatch, version, false);
}

/** Whether the request set If-Match or If-None-Match: a change then reads the version before it writes. */
export function hasPreconditions(preconditions: Preconditions | undefined): boolean {
  return preconditions?.ifMatch !== undefined || preconditions?.ifNoneMatch !== undefined;
}

/**
 * A change's preconditions against the entity's current version (null: it does not exist yet),
 * read under the lock its change takes: 412 naming the current version when one fails.
 */
export function requirePreconditions(
  preconditions: Preconditions | undefined,
  entity: string,
  version: number | null,
): void {
  const { ifMatch, ifNoneMatch } = preconditions ?? {};
  if (ifMatch !== undefined && !names(ifMatch, version, true))
    throw new PreconditionFailedError(entity, IF_MATCH, version);
  if (ifNoneMatch !== undefined && names(ifNoneMatch, version, false))
    throw new PreconditionFailedError(entity, IF_NONE_MATCH, version);
}

/** Says the answer's version in `ETag` (moleculer-web sends ctx.meta.$responseHeaders). */
export function respondVersion(meta: { $responseHeaders?: Record<string, string> }, version: number): void {
  meta.$responseHeaders = { ...meta.$responseHeaders, ETag: versionTag(version) };
}
