/**
 * Idempotency-Key support, for every service that honours it (orders.create; the webhooks test,
 * redeliver and recover actions): the same key with the same body replays the first response; the
 * same key with another body is refused. Bodies are compared by a hash of their canonical JSON
 * (object keys sorted), so key order and whitespace do not matter.
 */
import { createHash } from "node:crypto";

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function requestHash(body: unknown): string {
  return createHash("sha256").update(canonical(body)).digest("hex");
}

/**
 * The response header that tells a client its retry was answered from the stored first
 * response (nothing was created this time), as Stripe and the IETF Idempotency-Key draft's
 * implementations do, so a client can tell a replay from a fresh order without comparing bodies.
 */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** Marks the HTTP answer of this call as a replay (moleculer-web sends ctx.meta.$responseHeaders). */
export function markReplayed(meta: { $responseHeaders?: Record<string, string> }): void {
  meta.$responseHeaders = { ...meta.$responseHeaders, [REPLAYED_HEADER]: "true" };
}
