/**
 * One webhook request: checks the target again (DNS can change since subscribing), then POSTs
 * the event's JSON with the X-WEBHOOK-* and Standard Webhooks headers to the very addresses
 * that were checked, and says what happened. It never throws.
 */
import http from "node:http";
import https from "node:https";
import axios, { type AxiosError, type AxiosRequestConfig } from "axios";
import { productUserAgent } from "../../shared/product";
import { sign } from "./webhooks.signing";
import { checkTarget, type ResolvedAddress } from "./webhooks.url-policy";

export interface OutgoingWebhook {
  url: string;
  event: string;
  key: string;
  secret: string;
  webhookId: string;
  /** The exact JSON text to send. */
  body: string;
}

export interface SenderOptions {
  timeoutMs: number;
  allowInsecure: boolean;
}

export type AttemptOutcome =
  /** The receiver answered 2xx. */
  | { kind: "delivered"; statusCode: number; durationMs: number }
  /** The receiver answered something else. */
  | { kind: "rejected"; statusCode: number; durationMs: number }
  /** No answer within the time-out. */
  | { kind: "timeout"; error: string; durationMs: number }
  /** No answer: connection refused or reset, name did not resolve, TLS failed. */
  | { kind: "error"; error: string; durationMs: number }
  /** Not sent: the URL now leads to a forbidden address (or is no longer acceptable). */
  | { kind: "refused"; error: string; durationMs: number };

// Connections are reused across deliveries: most subscribers receive many.
const httpAgent = new http.Agent({ keepAlive: true });
const httpsAgent = new https.Agent({ keepAlive: true });

/** Connects to a checked address only, whatever the name resolves to by then. */
function pinnedLookup(addresses: ResolvedAddress[]): AxiosRequestConfig["lookup"] {
  const [first] = addresses;
  return async () => ({ address: first.address, family: first.family });
}

export function webhookHeaders(w: OutgoingWebhook, now: Date = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    "Content-Type": "application/json",
    "User-Agent": productUserAgent(),
    "X-WEBHOOK-EVENT": w.event,
    "X-WEBHOOK-KEY": w.key,
    "webhook-id": w.webhookId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": sign(w.secret, w.webhookId, timestamp, w.body),
  };
}

const TIMEOUT_CODES = new Set(["ECONNABORTED", "ETIMEDOUT", "ERR_CANCELED"]);

function failureOf(err: unknown, timeoutMs: number, durationMs: number): AttemptOutcome {
  const e = err as AxiosError & { cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (code && TIMEOUT_CODES.has(code)) return { kind: "timeout", error: `No answer within ${timeoutMs} ms.`, durationMs };
  return { kind: "error", error: code ? `${code}: ${e.message}` : (e.message ?? String(err)), durationMs };
}

export async function sendWebhook(w: OutgoingWebhook, opts: SenderOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const target = await checkTarget(w.url, { allowInsecure: opts.allowInsecure });
  if (!target.ok) {
    return target.kind === "unresolved"
      ? { kind: "error", error: target.reason, durationMs: elapsed() }
      : { kind: "refused", error: target.reason, durationMs: elapsed() };
  }
  try {
    const response = await axios.post(target.url.href, w.body, {
      headers: webhookHeaders(w),
      // The body is already the exact JSON text: no transformation.
      transformRequest: [(data: unknown) => data],
      responseType: "stream",
      // A redirect could lead anywhere, past the address check: it counts as a failure.
      maxRedirects: 0,
      validateStatus: () => true,
      timeout: opts.timeoutMs,
      signal: AbortSignal.timeout(opts.timeoutMs),
      lookup: pinnedLookup(target.addresses),
      httpAgent,
      httpsAgent,
      proxy: false,
    });
    // Only the status matters; the body is discarded so the connection can be reused.
    (response.data as NodeJS.ReadableStream).resume();
    const statusCode = response.status;
    return statusCode >= 200 && statusCode < 300
      ? { kind: "delivered", statusCode, durationMs: elapsed() }
      : { kind: "rejected", statusCode, durationMs: elapsed() };
  } catch (err) {
    return failureOf(err, opts.timeoutMs, elapsed());
  }
}
