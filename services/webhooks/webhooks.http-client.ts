/**
 * The one axios instance webhook requests go through. Every option that is the same for every
 * request is set here once; a request gives only what varies (URL, body, headers, agents,
 * deadline). axios merges each request's configuration with its instance's defaults and then
 * normalizes the headers of both (bench/README.md, issue 23: 27–29 % of a webhooks process),
 * so the defaults hold nothing a request would merge for nothing: this is an `Axios` made from
 * these options alone, not `axios.create`, which would carry axios's global defaults along
 * (a header set per HTTP method, the JSON transforms, `transitional`), walked on each request.
 */
import http from "node:http";
import https from "node:https";
import axios, { type AxiosRequestConfig, type AxiosResponse } from "axios";
import { webhookTransport } from "./webhooks.http-transport";

/**
 * What axios's global defaults sent, kept so the requests are unchanged on the wire. (The
 * adapter, webhooks.http-transport.ts, adds `Accept-Encoding: identity` and decodes an answer
 * compressed anyway.)
 */
export const ACCEPT = "application/json, text/plain, */*";

/** The options of every webhook request. Exported for the test that checks they hold. */
export const FIXED_OPTIONS: Readonly<AxiosRequestConfig> = {
  // One node:http(s) request on the checked address's agent (webhooks.http-transport.ts): the
  // answer comes as a stream, only its start kept (webhooks.response-capture.ts); any status
  // is an answer, the sender judges it; a redirect is not followed (it could lead anywhere,
  // past the address check) and no proxy is used, whatever HTTP(S)_PROXY says. No
  // transformRequest nor transformResponse: without axios's defaults there are none, so the
  // body goes as given (the exact JSON text).
  adapter: webhookTransport,
};

const client = new axios.Axios({ ...FIXED_OPTIONS });

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** The agents of the checked address (webhooks.pinned-agents.ts). */
  agents: { httpAgent: http.Agent; httpsAgent: https.Agent };
  /**
   * Aborts the request, and the reading of its answer, at the attempt's deadline: the only
   * time-out (axios's `timeout` would set a second timer per request for the same moment).
   */
  signal: AbortSignal;
}

/** POSTs the body; any status resolves, a failure to get an answer rejects (an AxiosError). */
export function postWebhook(request: WebhookRequest): Promise<AxiosResponse<unknown>> {
  return client.request({
    method: "post",
    url: request.url,
    data: request.body,
    headers: request.headers,
    signal: request.signal,
    httpAgent: request.agents.httpAgent,
    httpsAgent: request.agents.httpsAgent,
  });
}

/** The instance's defaults: what every request is merged with (the test checks it is FIXED_OPTIONS alone). */
export function clientDefaults(): Readonly<Record<string, unknown>> {
  return client.defaults as unknown as Record<string, unknown>;
}
