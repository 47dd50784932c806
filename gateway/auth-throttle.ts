/**
 * Throttles key guessing. Each failed authentication (no key, a malformed header, an unknown or
 * revoked key) counts against the source address and against the first KEY_PREFIX_LENGTH
 * characters of the key presented, so one key tried from many addresses is throttled as well as
 * many keys tried from one address. Once either has failed `failuresPerMinute` times in its
 * minute, the source is blocked: gateway/admission.ts then answers 429 before any lookup, unless
 * the key presented is one that may exist (gateway/active-keys.ts) — what others failed never
 * locks a valid key out. Successful authentications do not count. Counts are shared between
 * gateway replicas.
 */
import type { ServerResponse } from "node:http";
import { RateLimitedError } from "../shared/errors";
import {
  POLICY_NAMES,
  secondsUntil,
  setRateLimitFields,
  type RateLimitPolicy,
  type RateLimitState,
} from "./rate-limit-fields";
import type { LimiterState, SharedLimiter, UsageSharing } from "./usage-sharing";

/** `oik_` and 8 random characters: enough to tell keys apart, far too little to help a guesser. */
export const KEY_PREFIX_LENGTH = 12;
const WINDOW_SECONDS = 60;

/** Who is trying: the source address (gateway/client-address.ts) and the key presented, if any. */
export interface AuthAttempt {
  address: string;
  apiKey?: string;
}

export class AuthThrottle {
  private readonly byAddress: SharedLimiter | null;
  private readonly byKeyPrefix: SharedLimiter | null;
  private readonly policy: RateLimitPolicy;

  /** `failuresPerMinute` 0 turns the throttle off. */
  constructor(sharing: UsageSharing, failuresPerMinute: number) {
    this.policy = { name: POLICY_NAMES.authFailures, quota: failuresPerMinute, windowSeconds: WINDOW_SECONDS };
    const on = failuresPerMinute > 0;
    this.byAddress = on ? sharing.limiter("auth-address", failuresPerMinute, WINDOW_SECONDS) : null;
    this.byKeyPrefix = on ? sharing.limiter("auth-key-prefix", failuresPerMinute, WINDOW_SECONDS) : null;
  }

  /** When the address or the key prefix failed too often: the block that lasts longest; else null. */
  async blocked(attempt: AuthAttempt): Promise<RateLimitState | null> {
    const states = await this.states(attempt, (limiter, key) => limiter.peek(key));
    const blocked = states.filter((s) => !s.allowed);
    return blocked.length === 0 ? null : latestReset(blocked);
  }

  /** The 429 (Retry-After) of a blocked source, its fields set on `res`. */
  refusal(block: RateLimitState, res: ServerResponse): RateLimitedError {
    setRateLimitFields(res, this.policy, { remaining: 0, msBeforeReset: block.msBeforeReset });
    return new RateLimitedError(
      secondsUntil(block.msBeforeReset),
      "Too many failed authentications from this address or with this key; retry later.",
    );
  }

  /** Counts one failure; the answer (401) tells how many failures are left this minute. */
  async recordFailure(attempt: AuthAttempt, res: ServerResponse): Promise<void> {
    const states = await this.states(attempt, (limiter, key) => limiter.penalty(key));
    if (states.length === 0) return;
    const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
    setRateLimitFields(res, this.policy, tightest);
  }

  private async states(
    attempt: AuthAttempt,
    count: (limiter: SharedLimiter, key: string) => Promise<LimiterState>,
  ): Promise<LimiterState[]> {
    const pending: Promise<LimiterState>[] = [];
    if (this.byAddress) pending.push(count(this.byAddress, attempt.address));
    if (this.byKeyPrefix && attempt.apiKey)
      pending.push(count(this.byKeyPrefix, attempt.apiKey.slice(0, KEY_PREFIX_LENGTH)));
    return Promise.all(pending);
  }
}

function latestReset(states: RateLimitState[]): RateLimitState {
  return states.reduce((a, b) => (b.msBeforeReset > a.msBeforeReset ? b : a));
}
