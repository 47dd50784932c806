/**
 * What the endpoint answered, as an attempt keeps it (docs/webhooks.md, "Deliveries and
 * redelivery"): at most RESPONSE_HEADERS_MAX headers in RESPONSE_HEADERS_MAX_BYTES, and the
 * first RESPONSE_BODY_MAX_BYTES of the body as text, marked when there was more. Bounded so that
 * a million attempts cost what bench/README.md says, whatever a receiver sends back.
 *
 * Never the request's secrets: a receiver that echoes the request back would hand us our own
 * X-WEBHOOK-KEY values, so they are redacted wherever they appear; and a receiver's cookies are
 * not ours to keep.
 */
import type { Readable } from "node:stream";

export const RESPONSE_HEADERS_MAX = 20;
export const RESPONSE_HEADERS_MAX_BYTES = 2 * 1024;
export const RESPONSE_BODY_MAX_BYTES = 4 * 1024;
export const REDACTED = "[redacted]";

/**
 * Response headers never kept: what a receiver sets for its own clients (cookies), and the
 * hop-by-hop ones (RFC 9110 §7.6.1), which describe our connection, not the answer.
 */
const NOT_KEPT = new Set([
  "set-cookie",
  "set-cookie2",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
]);

export interface CapturedResponse {
  /** Lower-cased names, in the order received. */
  headers: Record<string, string>;
  body: string;
  /** The body was longer than what is kept (or could not be read to its end in time). */
  bodyTruncated: boolean;
}

/** Replaces every occurrence of the secrets in `text` (most texts hold none: they are left as they are). */
function redact(text: string, secrets: readonly string[]): string {
  return secrets.reduce((t, secret) => (secret && t.includes(secret) ? t.replaceAll(secret, REDACTED) : t), text);
}

/** A header's value as received: node gives a string, or a list of them for repeated headers. */
function headerText(value: unknown): string {
  if (Array.isArray(value)) return value.map(String).join(", ");
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The headers kept: in order, while both bounds hold (a header that does not fit is left out). */
export function keptHeaders(raw: Record<string, unknown>, secrets: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  let count = 0;
  let bytes = 0;
  for (const [name, value] of Object.entries(raw)) {
    const lower = name.toLowerCase();
    if (NOT_KEPT.has(lower) || value === undefined || value === null) continue;
    const text = redact(headerText(value), secrets);
    const size = Buffer.byteLength(lower) + Buffer.byteLength(text);
    if (count >= RESPONSE_HEADERS_MAX) break;
    if (bytes + size > RESPONSE_HEADERS_MAX_BYTES) continue;
    kept[lower] = text;
    count += 1;
    bytes += size;
  }
  return kept;
}

/** The longest start of `bytes` at most `max` long that does not cut a UTF-8 character. */
function utf8Prefix(bytes: Buffer, max: number): Buffer {
  if (bytes.length <= max) return bytes;
  let end = max;
  // Back over continuation bytes (10xxxxxx) to the start of the character that was cut.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end);
}

/**
 * The body kept as text: decoded as UTF-8 (bytes that are not become U+FFFD), NUL characters
 * replaced (PostgreSQL text cannot hold them), secrets redacted, then cut to the bound.
 */
export function keptBody(
  bytes: Buffer,
  complete: boolean,
  secrets: readonly string[],
): Omit<CapturedResponse, "headers"> {
  const text = redact(bytes.toString("utf8").replaceAll("\u0000", "\ufffd"), secrets);
  const encoded = Buffer.from(text, "utf8");
  const kept = utf8Prefix(encoded, RESPONSE_BODY_MAX_BYTES);
  return { body: kept.toString("utf8"), bodyTruncated: !complete || kept.length < encoded.length };
}

/**
 * Reads the start of a response body: enough to fill the bound even after redaction, then lets
 * the rest flow on unread (so the connection can be reused). Never rejects: a body that fails or
 * is cut by the attempt's deadline keeps what arrived, marked truncated.
 */
export function readBodyStart(
  stream: Readable,
  secrets: readonly string[],
): Promise<{ bytes: Buffer; complete: boolean }> {
  const wanted = RESPONSE_BODY_MAX_BYTES + 1 + Math.max(0, ...secrets.map((s) => Buffer.byteLength(s)));
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (complete: boolean) => {
      if (settled) return;
      settled = true;
      stream.off("data", onData);
      // Whatever is left is drained and dropped, as before any of it was kept.
      stream.on("error", () => undefined);
      stream.resume();
      resolve({ bytes: Buffer.concat(chunks), complete });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= wanted) settle(false);
    };
    stream.on("data", onData);
    stream.once("end", () => settle(true));
    stream.once("error", () => settle(false));
    stream.once("close", () => settle(false));
  });
}
