/**
 * The HTTP content codings this project undoes (RFC 9110 §8.4.1): a request body the gateway
 * reads (gateway/body-parser.ts) and an answer a webhook receiver compressed
 * (services/webhooks/webhooks.http-transport.ts). `identity` needs no decoder.
 */
import type { Transform } from "node:stream";
import zlib from "node:zlib";

export const CONTENT_DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};
