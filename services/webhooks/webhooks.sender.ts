/**
 * One webhook request: checks the target again (DNS can change since subscribing), then POSTs
 * the event's JSON with the X-WEBHOOK-* and Standard Webhooks headers to the very address that
 * was checked (webhooks.pinned-agents.ts), and says what happened. The time-out covers the
 * whole attempt, DNS included: a resolver that hangs ends as a `timeout`. It never throws.
 */
import type { Readable } from "node:stream";
import type { AxiosError } from "axios";
import type { SecretBox } from "../../shared/security/secret-box";
import { currentTraceparent } from "../../shared/observability/tracing";
import { postWebhook } from "./webhooks.http-client";
import {
  openedSubscription,
  subscriptionHeaders,
  type OpenedSubscription,
  type SubscriptionValues,
} from "./webhooks.opened-subscription";
import { agentsFor } from "./webhooks.pinned-agents";
import { keptBody, keptHeaders, readBodyStart, type CapturedResponse } from "./webhooks.response-capture";
import { signerFor, type Signer } from "./webhooks.signing";
import { checkTarget } from "./webhooks.url-policy";

/**
 * One request to send: the subscription's values as stored, sealed (shared/security/secret-box.ts;
 * see SubscriptionValues), and the request's own.
 */
export interface OutgoingWebhook extends SubscriptionValues {
  url: string;
  webhookId: string;
  /** The exact JSON text to send. */
  body: string;
}

export interface SenderOptions {
  timeoutMs: number;
  allowInsecure: boolean;
  /**
   * Opens the stored values, once per sealed value (webhooks.opened-subscription.ts): one that
   * cannot be opened (its encryption key is gone) is an `error` attempt, retried like any other,
   * not a stalled queue.
   */
  secrets: Pick<SecretBox, "open">;
}

export type AttemptOutcome =
  /** The receiver answered 2xx; `response` is what of its answer is kept (webhooks.response-capture.ts). */
  | { kind: "delivered"; statusCode: number; durationMs: number; response?: CapturedResponse }
  /** The receiver answered something else; `retryAfter` is its Retry-After header, if any (webhooks.retry-policy.ts). */
  | { kind: "rejected"; statusCode: number; durationMs: number; retryAfter?: string; response?: CapturedResponse }
  /** No answer within the time-out. */
  | { kind: "timeout"; error: string; durationMs: number }
  /** No answer: connection refused or reset, name did not resolve, TLS failed. */
  | { kind: "error"; error: string; durationMs: number }
  /** Not sent: the URL now leads to a forbidden address (or is no longer acceptable). */
  | { kind: "refused"; error: string; durationMs: number };

/** The headers that differ for each request: its id, and its signature at this time. */
function requestHeaders(sign: Signer, webhookId: string, body: string, now: Date): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    "webhook-id": webhookId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": sign(webhookId, timestamp, body),
  };
}

/** Every header of one request, from the subscription's values in clear (the sender keeps the fixed part opened). */
export function webhookHeaders(w: OutgoingWebhook, now: Date = new Date()): Record<string, string> {
  return { ...subscriptionHeaders(w), ...requestHeaders(signerFor(w), w.webhookId, w.body, now) };
}

const TIMEOUT_CODES = new Set(["ECONNABORTED", "ETIMEDOUT", "ERR_CANCELED"]);

function failureOf(err: unknown, timeoutMs: number, durationMs: number): AttemptOutcome {
  const e = err as AxiosError & { cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (code && TIMEOUT_CODES.has(code))
    return { kind: "timeout", error: `No answer within ${timeoutMs} ms.`, durationMs };
  return { kind: "error", error: code ? `${code}: ${e.message}` : (e.message ?? String(err)), durationMs };
}

/** The answer's Retry-After, kept only when it is text (a receiver may send anything). */
function retryAfterOf(headers: Record<string, unknown>): { retryAfter?: string } {
  const value = headers["retry-after"];
  return typeof value === "string" ? { retryAfter: value } : {};
}

/** axios hands its own headers object; as plain name → value, in the order received. */
function headersOf(headers: unknown): Record<string, unknown> {
  const h = headers as { toJSON?: () => Record<string, unknown> } & Record<string, unknown>;
  return typeof h.toJSON === "function" ? h.toJSON() : { ...h };
}

/**
 * The attempt's deadline: `signal` aborts `ms` from now, cutting the check, the request and the
 * reading of the answer alike. `clear` stops its timer once nothing of the attempt runs any more
 * (AbortSignal.timeout's would run to its end after every attempt, and make an error then).
 */
function deadlineIn(ms: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  // Like AbortSignal.timeout's: an attempt under way holds its socket; the timer holds nothing.
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** Calls `done` once the stream is closed: the answer was read (or drained) to its end, or cut. */
function whenClosed(stream: Readable, done: () => void): void {
  if (stream.closed) done();
  else stream.once("close", done);
}

const TIMED_OUT = Symbol("timed out");

/** `work`'s result, or TIMED_OUT once `deadline` fires first (the work itself is left to finish). */
function beforeDeadline<T>(work: Promise<T>, deadline: AbortSignal): Promise<T | typeof TIMED_OUT> {
  if (deadline.aborted) return Promise.resolve(TIMED_OUT);
  return new Promise((resolve, reject) => {
    const onTimeout = () => resolve(TIMED_OUT);
    deadline.addEventListener("abort", onTimeout, { once: true });
    work.then(resolve, reject).finally(() => deadline.removeEventListener("abort", onTimeout));
  });
}

export async function sendWebhook(w: OutgoingWebhook, opts: SenderOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const subscription = openedSubscription(w, opts.secrets);
  if ("error" in subscription) return { kind: "error", error: subscription.error, durationMs: elapsed() };
  const deadline = deadlineIn(opts.timeoutMs);
  const outcome = await attempt(w, subscription, opts, deadline, elapsed);
  // After an answer, the deadline still covers the draining of its body (cleared when it ends).
  if (outcome.kind !== "delivered" && outcome.kind !== "rejected") deadline.clear();
  return outcome;
}

async function attempt(
  w: OutgoingWebhook,
  subscription: OpenedSubscription,
  opts: SenderOptions,
  deadline: { signal: AbortSignal; clear: () => void },
  elapsed: () => number,
): Promise<AttemptOutcome> {
  const target = await beforeDeadline(checkTarget(w.url, { allowInsecure: opts.allowInsecure }), deadline.signal);
  if (target === TIMED_OUT)
    return { kind: "timeout", error: `The host did not resolve within ${opts.timeoutMs} ms.`, durationMs: elapsed() };
  if (!target.ok) {
    return target.kind === "unresolved"
      ? { kind: "error", error: target.reason, durationMs: elapsed() }
      : { kind: "refused", error: target.reason, durationMs: elapsed() };
  }
  const headers = { ...subscription.headers, ...requestHeaders(subscription.sign, w.webhookId, w.body, new Date()) };
  // The attempt's span (webhooks.dispatcher.ts), so the receiver can continue the trace.
  const traceparent = currentTraceparent();
  if (traceparent) headers.traceparent = traceparent;
  try {
    const response = await postWebhook({
      url: target.url.href,
      body: w.body,
      headers,
      // Pooled per checked address; the agents' own lookup answers that address only.
      agents: agentsFor(target.addresses[0]),
      signal: deadline.signal,
    });
    const body = response.data as Readable;
    whenClosed(body, deadline.clear);
    // The keys this request carried in clear: never kept, even when the receiver echoes them.
    const sentSecrets = subscription.sentKeys;
    const rawHeaders = headersOf(response.headers);
    // The start of the body is kept; the rest is drained unread so the connection can be reused.
    const start = await readBodyStart(body, sentSecrets);
    const captured = {
      headers: keptHeaders(rawHeaders, sentSecrets),
      ...keptBody(start.bytes, start.complete, sentSecrets),
    };
    const statusCode = response.status;
    return statusCode >= 200 && statusCode < 300
      ? { kind: "delivered", statusCode, durationMs: elapsed(), response: captured }
      : {
          kind: "rejected",
          statusCode,
          durationMs: elapsed(),
          ...retryAfterOf(rawHeaders),
          response: captured,
        };
  } catch (err) {
    return failureOf(err, opts.timeoutMs, elapsed());
  }
}
