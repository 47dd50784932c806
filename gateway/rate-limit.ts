/**
 * The per-client rate limit of /api/v1: RATE_LIMIT_PER_MINUTE requests a minute per
 * authenticated client. It is counted after authentication, by client id — never by the text of
 * the Authorization header — so spelling the header differently (`bearer`, extra spaces) or
 * rotating among a client's keys gives no new budget. The window is rate-limiter-flexible's fixed
 * window, starting with a client's first request; the replicas share their counts
 * (gateway/usage-sharing.ts). Every answer of an authenticated request carries
 * `RateLimit-Policy` and `RateLimit` (gateway/rate-limit-fields.ts); over the limit it is 429 with
 * `Retry-After`. Probes and the API reference are not limited.
 */
import type { ServerResponse } from "node:http";
import { RateLimitedError } from "../shared/errors";
import { POLICY_NAMES, secondsUntil, setRateLimitFields, type RateLimitPolicy } from "./rate-limit-fields";
import type { SharedLimiter, UsageSharing } from "./usage-sharing";

const WINDOW_SECONDS = 60;

export class ClientRateLimit {
  private readonly limiter: SharedLimiter | null;
  private readonly policy: RateLimitPolicy;

  /** `limitPerMinute` 0 turns the limit off. */
  constructor(sharing: UsageSharing, limitPerMinute: number) {
    this.policy = { name: POLICY_NAMES.requests, quota: limitPerMinute, windowSeconds: WINDOW_SECONDS };
    this.limiter = limitPerMinute > 0 ? sharing.limiter("requests", limitPerMinute, WINDOW_SECONDS) : null;
  }

  /** Counts one request of the client; throws RateLimitedError (429) once it is over the limit. */
  async admit(clientId: number, res: ServerResponse): Promise<void> {
    if (!this.limiter) return;
    const state = await this.limiter.consume(String(clientId));
    setRateLimitFields(res, this.policy, state);
    if (!state.allowed) throw new RateLimitedError(secondsUntil(state.msBeforeReset));
  }
}
