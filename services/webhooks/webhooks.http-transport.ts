/**
 * The axios adapter webhook requests go through: one `node:http(s)` request on the checked
 * address's keep-alive agent, the body written with the headers in one go, the answer handed
 * back as it comes. axios stays the client (its configuration, headers, errors and response
 * are what the sender sees); this replaces only its general-purpose `http` adapter, which
 * prepares on every request what a webhook never uses — redirects, proxies, form data,
 * progress events, upload streams, a listener per abort source, `setKeepAlive` on every socket —
 * and was most of a delivery's client cost (bench/README.md, issue 23, "the client's own cost").
 * An adapter is axios's own extension point for this (its README, "adapter").
 */
import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { AxiosError, CanceledError, type AxiosResponse, type InternalAxiosRequestConfig } from "axios";
import { CONTENT_DECODERS } from "../../shared/http/content-codings";

/** The answer's body, decoded when the receiver compressed it anyway. */
function decodedBody(response: http.IncomingMessage): Readable {
  const coding = response.headers["content-encoding"]?.toLowerCase();
  // Undone as axios's own adapter did: none is asked for (the request says `identity`), but a
  // receiver may compress regardless.
  const decoder = coding === undefined ? undefined : CONTENT_DECODERS[coding];
  if (!decoder) return response;
  delete response.headers["content-encoding"];
  const decoded = decoder();
  // A cut answer ends the reading of the decoded one too (webhooks.response-capture.ts).
  response.on("error", (err) => decoded.destroy(err));
  return response.pipe(decoded);
}

/**
 * POSTs `config.data` (the exact JSON text) to `config.url` with `config.headers`, through the
 * agent `config.httpAgent`/`httpsAgent`. Any status resolves; no answer rejects with an
 * AxiosError carrying the socket's code, or a CanceledError (ERR_CANCELED) once `config.signal`
 * aborts — which also cuts the reading of an answer under way.
 */
export function webhookTransport(config: InternalAxiosRequestConfig): Promise<AxiosResponse<Readable>> {
  return new Promise((resolve, reject) => {
    const signal = config.signal as AbortSignal;
    if (signal.aborted) return reject(new CanceledError(undefined, config));
    const url = new URL(config.url as string);
    // Text, not a Buffer: Node then writes the headers and the body as one chunk, not two.
    const body = config.data as string;
    // Asks for the body as it is, unless the subscription's own headers say otherwise.
    config.headers.set("Accept-Encoding", "identity", false);
    const headers = config.headers.toJSON(true);
    headers["Content-Length"] = String(Buffer.byteLength(body));
    const secure = url.protocol === "https:";
    const request = (secure ? https : http).request(url, {
      method: "POST",
      headers,
      agent: (secure ? config.httpsAgent : config.httpAgent) as http.Agent,
    });
    let answer: http.IncomingMessage | undefined;
    const onAbort = () => {
      const cancelled = new CanceledError(undefined, config, request);
      if (answer) answer.destroy(cancelled);
      request.destroy(cancelled);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const done = () => signal.removeEventListener("abort", onAbort);
    request.on("error", (err) => {
      done();
      reject(err instanceof CanceledError ? err : AxiosError.from(err, undefined, config, request));
    });
    request.on("response", (response) => {
      answer = response;
      response.once("close", done);
      resolve({
        status: response.statusCode ?? 0,
        statusText: response.statusMessage ?? "",
        headers: response.headers as AxiosResponse["headers"],
        config,
        request,
        data: decodedBody(response),
      });
    });
    request.end(body);
  });
}
