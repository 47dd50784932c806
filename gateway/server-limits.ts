/**
 * Limits of the gateway's Node HTTP server, set on purpose rather than inherited (docs/api.md,
 * "Limits"). They bound what a client can make the server hold before any route runs: the
 * header block (size and count) and how long a client may take to send its headers and its
 * whole request — a slow sender (slowloris) is cut off instead of holding a connection open.
 * The body's size, JSON depth and array lengths are the route's body parser's limits.
 */
import type { Server } from "node:http";

export const SERVER_LIMITS = {
  /** Bytes of the request line and headers together; more is answered 431 by Node. */
  maxHeaderSize: 16 * 1024,
  /** Headers read per request; the ones after it are ignored. */
  maxHeadersCount: 100,
  /** Time to receive the complete header block; then 408 and the connection closes. */
  headersTimeoutMs: 10_000,
  /** Time to receive the complete request, body included; then 408 and the connection closes. */
  requestTimeoutMs: 30_000,
} as const;

/** `maxHeaderSize` is a constructor option, read again by Node for every new connection. */
type ServerWithHeaderSize = Server & { maxHeaderSize?: number };

export function applyServerLimits(server: Server): void {
  (server as ServerWithHeaderSize).maxHeaderSize = SERVER_LIMITS.maxHeaderSize;
  server.maxHeadersCount = SERVER_LIMITS.maxHeadersCount;
  server.headersTimeout = SERVER_LIMITS.headersTimeoutMs;
  server.requestTimeout = SERVER_LIMITS.requestTimeoutMs;
}
