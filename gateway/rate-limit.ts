/**
 * Per-client rate limiting of /api/v1 with moleculer-web's limiter: a fixed one-minute window
 * counted in this gateway's memory, so the limit holds per gateway replica (N replicas let a
 * client make up to N × RATE_LIMIT_PER_MINUTE requests a minute). Probes are not limited.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ApiSettingsSchema } from "moleculer-web";
import { PrincipalCache } from "./principal-cache";

const WINDOW_MS = 60_000;

/** The `rateLimit` option of the /api/v1 route, or nothing when the limit is 0 (off). */
export function rateLimitOption(limitPerMinute: number): Pick<ApiSettingsSchema, "rateLimit"> {
  if (limitPerMinute <= 0) return {};
  return {
    rateLimit: {
      window: WINDOW_MS,
      limit: limitPerMinute,
      // X-Rate-Limit-Limit, X-Rate-Limit-Remaining and X-Rate-Limit-Reset (epoch ms) on every answer.
      headers: true,
      // Per API key (its hash: the key itself is a secret), else per address.
      key: (req: IncomingMessage) => {
        const auth = req.headers.authorization;
        return auth ? PrincipalCache.keyOf(auth) : (req.socket.remoteAddress ?? "unknown");
      },
    },
  };
}

/** Seconds until the current window ends, from the limiter's X-Rate-Limit-Reset; at least 1. */
export function retryAfterSeconds(res: ServerResponse, now = Date.now()): number | null {
  const reset = Number(res.getHeader("X-Rate-Limit-Reset"));
  if (!Number.isFinite(reset) || reset <= 0) return null;
  return Math.max(1, Math.ceil((reset - now) / 1000));
}
