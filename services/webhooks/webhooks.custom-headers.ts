/**
 * A subscription's custom request headers (docs/webhooks.md, "Changing a subscription"): up to
 * MAX_CUSTOM_HEADERS headers its owner wants on every request (a token the receiver checks, a
 * tenant id...). Their values may be credentials, so they are stored sealed like the key and the
 * secret and never shown again: the representation lists their names only.
 *
 * Names that would change how the request is framed or routed (hop-by-hop, Host,
 * Content-*), and every header this service sets itself — above all the key and the signature
 * headers, which a receiver relies on — are refused: a custom header can add, never replace.
 */
import { InvalidInputError } from "../../shared/errors";
import type { SecretBox } from "../../shared/security/secret-box";

export const MAX_CUSTOM_HEADERS = 10;

/** A header name as RFC 9110 writes one (a token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII and spaces: nothing that could end the header line. */
export const HEADER_VALUE = /^[\x20-\x7e]+$/;

/** Lower-cased names a subscriber may not set. */
const RESERVED = new Set([
  // What every delivery carries already (webhooks.sender.ts, the trace headers).
  "content-type",
  "user-agent",
  "traceparent",
  "tracestate",
  // Framing and routing, which the HTTP client decides.
  "host",
  "content-length",
  "content-encoding",
  "expect",
  // Hop-by-hop (RFC 9110 §7.6.1), and the proxies' own.
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
/** Standard Webhooks' `webhook-*` (id, timestamp, signature) and our `X-WEBHOOK-*` (event, keys), now and later. */
const RESERVED_PREFIXES = ["webhook-", "x-webhook-"];

export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** A change asked for: a value sets the header, `null` removes it. */
export type HeaderChanges = Record<string, string | null>;

/**
 * The headers after `changes`: names compare case-insensitively (a change replaces the header
 * whatever its case), a reserved name is refused, and at most MAX_CUSTOM_HEADERS remain.
 * Throws InvalidInputError naming the field.
 */
export function applyHeaderChanges(current: Record<string, string>, changes: HeaderChanges): Record<string, string> {
  const next = new Map(Object.entries(current).map(([name, value]) => [name.toLowerCase(), { name, value }]));
  for (const [name, value] of Object.entries(changes)) {
    if (isReservedHeader(name))
      throw InvalidInputError.field(
        `headers.${name}`,
        "This header is set by the service itself, or decides how the request travels: it cannot be a custom header.",
      );
    if (value === null) next.delete(name.toLowerCase());
    else next.set(name.toLowerCase(), { name, value });
  }
  if (next.size > MAX_CUSTOM_HEADERS)
    throw InvalidInputError.field("headers", `At most ${MAX_CUSTOM_HEADERS} custom headers per subscription.`);
  return Object.fromEntries([...next.values()].map(({ name, value }) => [name, value]));
}

/** The stored form: the names in clear, the values sealed as one JSON object (null when there are none). */
export function sealHeaders(
  headers: Record<string, string>,
  box: Pick<SecretBox, "seal">,
): { names: string[]; sealed: string | null } {
  const names = Object.keys(headers);
  return { names, sealed: names.length === 0 ? null : box.seal(JSON.stringify(headers)) };
}

/** The stored headers in clear; none when nothing is stored. */
export function openHeaders(sealed: string | null | undefined, box: Pick<SecretBox, "open">): Record<string, string> {
  return sealed ? (JSON.parse(box.open(sealed)) as Record<string, string>) : {};
}
