/**
 * The `RateLimit-Policy` and `RateLimit` response fields of draft-ietf-httpapi-ratelimit-headers-09:
 * structured-field lists whose items are a quoted policy name with parameters —
 * `q` quota and `w` window in seconds for the policy; `r` remaining quota and `t` seconds until
 * it is restored for the current state.
 *
 *   RateLimit-Policy: "default";q=6000;w=60
 *   RateLimit: "default";r=42;t=17
 */
import type { ServerResponse } from "node:http";

/** The two policies: a client's requests (gateway/rate-limit.ts), a source's failed authentications (gateway/auth-throttle.ts). */
export const POLICY_NAMES = { requests: "default", authFailures: "auth-failures" } as const;

export interface RateLimitPolicy {
  /** A structured-field string: letters, digits, `-` only, so it never needs escaping. */
  name: string;
  quota: number;
  windowSeconds: number;
}

export interface RateLimitState {
  remaining: number;
  msBeforeReset: number;
}

export function policyField(policy: RateLimitPolicy): string {
  return `"${policy.name}";q=${policy.quota};w=${policy.windowSeconds}`;
}

export function stateField(policy: RateLimitPolicy, state: RateLimitState): string {
  return `"${policy.name}";r=${Math.max(0, state.remaining)};t=${secondsUntil(state.msBeforeReset, 0)}`;
}

/** Whole seconds, rounded up, never below `floor` (Retry-After uses 1: "retry now" would be a lie). */
export function secondsUntil(ms: number, floor = 1): number {
  return Math.max(floor, Math.ceil(ms / 1000));
}

export function setRateLimitFields(res: ServerResponse, policy: RateLimitPolicy, state: RateLimitState): void {
  if (res.headersSent) return;
  res.setHeader("RateLimit-Policy", policyField(policy));
  res.setHeader("RateLimit", stateField(policy, state));
}
