/**
 * The one reader of request bodies and query strings on /api/v1 (a moleculer-web route
 * middleware, in place of its body-parser): whatever a client sends is either refused with a
 * 4xx problem here, or reaches the action as a value that passed gateway/json-body.ts.
 *
 * - a body on POST/PUT/PATCH must be JSON (`application/json` or `application/*+json`, UTF-8):
 *   any other media type or charset is 415 with `Accept-Post: application/json`;
 * - `Content-Encoding` may be identity, gzip, deflate or br: another is 415, a corrupt one 400;
 * - at most BODY_LIMIT_BYTES, or the route's own limit (gateway/routes.ts, `bodyLimitBytes`), counted
 *   after decompression (a small gzip bomb is still 413);
 * - query keys naming a prototype are refused (qs would drop them silently), and a field may
 *   not come both in the query and in the body (moleculer-web lets the query win).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Transform } from "node:stream";
import {
  InvalidInputError,
  MalformedRequestError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from "../shared/errors";
import {
  BODY_LIMIT_BYTES,
  NDJSON_MEDIA_TYPE,
  inspectJsonValue,
  isForbiddenKey,
  parseJsonBody,
  ProblemList,
} from "../shared/http/json-body";
import { CONTENT_DECODERS } from "../shared/http/content-codings";

export { BODY_LIMIT_BYTES };
export const JSON_MEDIA_TYPE = "application/json";
export const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

const SUPPORTED_ENCODINGS = ["identity", ...Object.keys(CONTENT_DECODERS)].join(", ");

type Req = IncomingMessage & { body?: unknown; query?: Record<string, unknown>; originalUrl?: string };

/** A body is there when it has a length above 0 or is chunked (`fetch` sends `Content-Length: 0` on a bare POST). */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}

function isJsonMediaType(contentType: string | undefined): boolean {
  const [type, ...params] = (contentType ?? "")
    .toLowerCase()
    .split(";")
    .map((p) => p.trim());
  if (type !== JSON_MEDIA_TYPE && !/^application\/[\w.-]+\+json$/.test(type)) return false;
  // JSON is UTF-8 (RFC 8259 §8.1): any other charset would be decoded into something else.
  const charset = params.find((p) => p.startsWith("charset="));
  return charset === undefined || /^charset="?utf-8"?$/.test(charset);
}

function decompressorFor(req: IncomingMessage): Transform | null {
  const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (encoding === "identity" || encoding === "") return null;
  const make = CONTENT_DECODERS[encoding];
  if (!make) {
    throw new UnsupportedMediaTypeError(
      `Content-Encoding "${encoding}" is not supported; use one of ${SUPPORTED_ENCODINGS}.`,
      { encodings: SUPPORTED_ENCODINGS },
    );
  }
  return make();
}

/** The body's bytes, decompressed, refused past the limit without reading the rest into memory. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const decompressor = decompressorFor(req);
  if (!decompressor && Number(req.headers["content-length"] ?? 0) > limit) throw new PayloadTooLargeError(limit);
  const source = decompressor ?? req;
  if (decompressor) {
    req.on("error", (err) => decompressor.destroy(err));
    req.pipe(decompressor);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw new PayloadTooLargeError(limit);
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof PayloadTooLargeError) throw err;
    throw new MalformedRequestError(
      `The body could not be decoded as Content-Encoding "${req.headers["content-encoding"]}".`,
    );
  } finally {
    // Whatever was not read is discarded, so the answer is not held up by the upload.
    req.unpipe();
    req.resume();
  }
  return Buffer.concat(chunks);
}

async function parseBody(req: Req, limit: number): Promise<unknown> {
  if (!WITH_BODY.has(req.method ?? "") || !hasBody(req)) return undefined;
  if (!isJsonMediaType(req.headers["content-type"])) {
    throw new UnsupportedMediaTypeError(`The body must be JSON (Content-Type: ${JSON_MEDIA_TYPE}; charset=utf-8).`, {
      mediaType: JSON_MEDIA_TYPE,
    });
  }
  const raw = await readBody(req, limit);
  // An empty chunked body is no body at all, as for `Content-Length: 0`.
  return raw.length === 0 ? undefined : parseJsonBody(raw);
}

/** The raw query's keys, split the way qs splits them (`a[b][c]`, `a.b`). */
function queryKeySegments(req: Req): { key: string; segments: string[] }[] {
  const url = req.originalUrl ?? req.url ?? "";
  const at = url.indexOf("?");
  if (at === -1) return [];
  return [...new URLSearchParams(url.slice(at + 1)).keys()].map((key) => ({ key, segments: key.split(/[[\].]/) }));
}

function checkQuery(req: Req, body: unknown): void {
  const found = new ProblemList();
  for (const { key, segments } of queryKeySegments(req)) {
    if (segments.some(isForbiddenKey)) found.add(key, "This query parameter is not allowed.");
  }
  // Named once: the parsed query may still hold the same key (qs keeps `prototype`).
  found.throwIfAny();
  inspectJsonValue(req.query ?? {}, found);
  if (body !== null && typeof body === "object") {
    for (const key of Object.keys(req.query ?? {})) {
      if (Object.hasOwn(body, key)) found.add(key, "Given both in the query string and in the body; send it once.");
    }
  }
  found.throwIfAny();
}

/**
 * A route whose body streams on to its action (an NDJSON import, gateway/routes.ts): only its
 * media type, encoding and query are checked here; the service reads the lines one by one and
 * holds them to its own limits (lines, bytes), so the body is never held here.
 */
export function checkStreamedBody(req: Req): void {
  if (hasBody(req)) {
    const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
    if (type !== NDJSON_MEDIA_TYPE) {
      throw new UnsupportedMediaTypeError(
        `The body must be NDJSON, one order per line (Content-Type: ${NDJSON_MEDIA_TYPE}).`,
        { mediaType: NDJSON_MEDIA_TYPE },
      );
    }
    const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
    if (encoding !== "identity" && encoding !== "") {
      throw new UnsupportedMediaTypeError(`An NDJSON upload is sent without Content-Encoding.`, {
        encodings: "identity",
      });
    }
  }
  checkQuery(req, undefined);
}

/**
 * The route middleware: sets `req.body` (undefined when there is none) or fails with a 4xx domain
 * error. `this`: the gateway, which knows the body limit of the request's route.
 */
export function jsonBodyParser(
  this: { bodyLimitOf(req: IncomingMessage): number },
  req: Req,
  _res: ServerResponse,
  next: (err?: unknown) => void,
): void {
  parseBody(req, this.bodyLimitOf(req))
    .then((body) => {
      checkQuery(req, body);
      req.body = body;
    })
    .then(() => next(), next);
}

/** The 422 for a request that needs a body and came without one. */
export function bodyRequired(): InvalidInputError {
  return InvalidInputError.field("", `A JSON body is required (Content-Type: ${JSON_MEDIA_TYPE}).`);
}

type ParamRule = string | { optional?: boolean; default?: unknown } | unknown[];

function isOptional(rule: ParamRule): boolean {
  if (typeof rule === "string") return /\|\s*optional(:\s*true)?\b/.test(rule);
  if (rule !== null && typeof rule === "object" && !Array.isArray(rule))
    return rule.optional === true || rule.default !== undefined;
  return false;
}

/** Whether an action's params schema has a required field the path does not supply, i.e. it needs a body. */
export function requiresBody(params: unknown, pathParams: string[]): boolean {
  if (params === null || typeof params !== "object") return false;
  return Object.entries(params as Record<string, ParamRule>).some(
    ([name, rule]) => !name.startsWith("$$") && !pathParams.includes(name) && !isOptional(rule),
  );
}
