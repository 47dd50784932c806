/**
 * One webhook request: checks the target again (DNS can change since subscribing), then POSTs
 * the event's JSON with the X-WEBHOOK-* and Standard Webhooks headers to the very address that
 * was checked (webhooks.pinned-agents.ts), and says what happened. The time-out covers the
 * whole attempt, DNS included: a resolver that hangs ends as a `timeout`. It never throws.
 */
import type { Readable } from "node:stream";
import axios, { type AxiosError } from "axios";
import { productUserAgent } from "../../shared/product";
import type { SecretBox } from "../../shared/security/secret-box";
import { traceHeaders } from "../../shared/observability/tracing";
import { agentsFor } from "./webhooks.pinned-agents";
import { keptBody, keptHeaders, readBodyStart, type CapturedResponse } from "./webhooks.response-capture";
import { signatureHeader } from "./webhooks.signing";
import { checkTarget } from "./webhooks.url-policy";

export interface OutgoingWebhook {
  url: string;
  event: string;
  /** The X-WEBHOOK-KEY value and the signing secret as stored: sealed (shared/security/secret-box.ts). */
  key: string;
  secret: string;
  /** Sealed too; absent or null when the subscription has no Ed25519 key pair. */
  signingKey?: string | null;
  /** What a rotation replaced, sealed, while its overlap lasts; absent or null otherwise (webhooks.signing.ts). */
  previous?: { key: string; secret: string; signingKey?: string | null } | null;
  /** The subscription's custom headers as one JSON object, sealed (webhooks.custom-headers.ts); absent or null when none. */
  customHeaders?: string | null;
  webhookId: string;
  /** The exact JSON text to send. */
  body: string;
}

export interface SenderOptions {
  timeoutMs: number;
  allowInsecure: boolean;
  /**
   * Opens the stored key and secret, just before signing: one that cannot be opened (its
   * encryption key is gone) is an `error` attempt, retried like any other, not a stalled queue.
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

/**
 * The keys and secrets here are the opened (clear) values. During a rotation's overlap the
 * replaced key rides along in X-WEBHOOK-PREVIOUS-KEY, as the replaced secret's signature does in
 * webhook-signature: a receiver accepts either until it has switched (docs/webhooks.md).
 */
export function webhookHeaders(w: OutgoingWebhook, now: Date = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    // First, so nothing of ours could be replaced (reserved names are refused anyway).
    ...(w.customHeaders ? (JSON.parse(w.customHeaders) as Record<string, string>) : {}),
    "Content-Type": "application/json",
    "User-Agent": productUserAgent(),
    "X-WEBHOOK-EVENT": w.event,
    "X-WEBHOOK-KEY": w.key,
    ...(w.previous ? { "X-WEBHOOK-PREVIOUS-KEY": w.previous.key } : {}),
    "webhook-id": w.webhookId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(w, w.webhookId, timestamp, w.body),
  };
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

function opened(w: OutgoingWebhook, secrets: SenderOptions["secrets"]): OutgoingWebhook | { error: string } {
  const open = (sealed: string | null | undefined) => (sealed ? secrets.open(sealed) : null);
  try {
    return {
      ...w,
      key: secrets.open(w.key),
      secret: secrets.open(w.secret),
      signingKey: open(w.signingKey),
      customHeaders: open(w.customHeaders),
      previous: w.previous && {
        key: secrets.open(w.previous.key),
        secret: secrets.open(w.previous.secret),
        signingKey: open(w.previous.signingKey),
      },
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

export async function sendWebhook(stored: OutgoingWebhook, opts: SenderOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const w = opened(stored, opts.secrets);
  if ("error" in w) return { kind: "error", error: w.error, durationMs: elapsed() };
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const target = await beforeDeadline(checkTarget(w.url, { allowInsecure: opts.allowInsecure }), deadline);
  if (target === TIMED_OUT)
    return { kind: "timeout", error: `The host did not resolve within ${opts.timeoutMs} ms.`, durationMs: elapsed() };
  if (!target.ok) {
    return target.kind === "unresolved"
      ? { kind: "error", error: target.reason, durationMs: elapsed() }
      : { kind: "refused", error: target.reason, durationMs: elapsed() };
  }
  try {
    const response = await axios.post(target.url.href, w.body, {
      // traceparent: the attempt's span (webhooks.dispatcher.ts), so the receiver can continue the trace.
      headers: { ...webhookHeaders(w), ...traceHeaders() },
      // The body is already the exact JSON text: no transformation.
      transformRequest: [(data: unknown) => data],
      responseType: "stream",
      // A redirect could lead anywhere, past the address check: it counts as a failure.
      maxRedirects: 0,
      validateStatus: () => true,
      // What is left of the attempt's time-out after the check.
      timeout: Math.max(1, opts.timeoutMs - elapsed()),
      signal: deadline,
      // Pooled per checked address; the agents' own lookup answers that address only.
      ...agentsFor(target.addresses[0]),
      proxy: false,
    });
    // The keys this request carried in clear: never kept, even when the receiver echoes them.
    const sentSecrets = [w.key, w.previous?.key ?? ""];
    const rawHeaders = headersOf(response.headers);
    // The start of the body is kept; the rest is drained unread so the connection can be reused.
    const start = await readBodyStart(response.data as Readable, sentSecrets);
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
