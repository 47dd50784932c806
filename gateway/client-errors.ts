/**
 * Requests that Node's HTTP server refuses itself, before any route runs: headers over
 * `SERVER_LIMITS.maxHeaderSize` (431), a client too slow to send its headers or its request
 * (408), chunk extensions over Node's bound (413), and anything its parser cannot read — a
 * garbage request line, a malformed header (400). Node would answer them with a bare status
 * line; here they get the RFC 9457 document every other refusal gets, built by
 * shared/http/problem.ts, with `Connection: close`: the parser's state is unknown, so the
 * connection cannot carry another request.
 */
import { STATUS_CODES, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ErrorType } from "../shared/errors";
import { toProblem } from "../shared/http/problem";
import { SERVER_LIMITS } from "./server-limits";

interface RefusalCause {
  type: string;
  message: string;
}

/** Node's error code → what the problem document says (the type selects problem.ts's mapping). */
function causeOf(code: string | undefined): RefusalCause {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return {
        type: "HEADERS_TOO_LARGE",
        message: `The request line and headers together are larger than ${SERVER_LIMITS.maxHeaderSize} bytes.`,
      };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { type: "CLIENT_TIMEOUT", message: "The request was not received in time; the connection is closed." };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return {
        type: ErrorType.payloadTooLarge,
        message: "The chunk extensions of the body are larger than the server accepts.",
      };
    default:
      return {
        type: ErrorType.malformedRequest,
        message: "The request is not valid HTTP/1.1 (request line or headers).",
      };
  }
}

/** The whole HTTP/1.1 answer, bytes as they go on the wire. */
export function clientErrorResponse(code: string | undefined): Buffer {
  const problem = toProblem(causeOf(code));
  const body = Buffer.from(JSON.stringify(problem.body));
  const headers = { ...problem.headers, "Content-Length": String(body.length), Connection: "close" };
  const head = [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), body]);
}

/** The response in flight on this connection, when the parser got that far (Node keeps it there). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

/**
 * Answers the server's `clientError`s. A response whose headers already left cannot be followed
 * by another one on the same connection, and a reset or closed socket takes nothing: those are
 * only closed, as Node would.
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: HttpSocket) => {
    const canAnswer = err.code !== "ECONNRESET" && socket.writable && !socket._httpMessage?.headersSent;
    if (!canAnswer) {
      socket.destroy();
      return;
    }
    // Half-open sockets are allowed on HTTP servers: close it ourselves once the answer is flushed.
    socket.end(clientErrorResponse(err.code), () => socket.destroy());
  });
}
