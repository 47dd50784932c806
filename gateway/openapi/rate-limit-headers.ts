/**
 * `RateLimit-Policy` and `RateLimit` as the document declares them (draft-ietf-httpapi-ratelimit-
 * headers-09, gateway/rate-limit-fields.ts), so that clients generated from it see them. Which
 * policy an answer carries: `"default"` on every answer of a request whose key was checked (the
 * client's own limit), `"auth-failures"` on a failed authentication's 401 (the source's
 * throttle), either on a 429. Optional everywhere: a limit set to 0 sends none, and answers
 * refused before the key is read (a malformed `X-Request-Id`) carry none.
 */
import { POLICY_NAMES } from "../rate-limit-fields";

/** Which answers: a checked key's, a failed authentication's, or a 429 of either limit. */
export type RateLimitedAnswer = "checked" | "failedAuthentication" | "refused";

const POLICIES: Record<RateLimitedAnswer, { pattern: string; example: string; which: string }> = {
  checked: {
    pattern: `"${POLICY_NAMES.requests}"`,
    example: POLICY_NAMES.requests,
    which: `the client's own limit (\`RATE_LIMIT_PER_MINUTE\` requests a minute, 6000 by default), on every answer of a request whose key was checked`,
  },
  failedAuthentication: {
    pattern: `"${POLICY_NAMES.authFailures}"`,
    example: POLICY_NAMES.authFailures,
    which: `the failed-authentication throttle of the address and key prefix (\`AUTH_FAILURES_PER_MINUTE\`, 20 a minute by default)`,
  },
  refused: {
    pattern: `"(?:${POLICY_NAMES.requests}|${POLICY_NAMES.authFailures})"`,
    example: POLICY_NAMES.requests,
    which: `the limit that refused the request: \`"${POLICY_NAMES.requests}"\` (the client's requests) or \`"${POLICY_NAMES.authFailures}"\` (failed authentications from this address or with this key)`,
  },
};

const NAMES: Record<RateLimitedAnswer, { policy: string; state: string }> = {
  checked: { policy: "RateLimitPolicy", state: "RateLimit" },
  failedAuthentication: { policy: "AuthFailuresPolicy", state: "AuthFailuresRateLimit" },
  refused: { policy: "RefusingPolicy", state: "RefusingRateLimit" },
};

/** The header components: a policy and a state for each kind of answer. */
export function rateLimitHeaderComponents(): Record<string, unknown> {
  return Object.fromEntries(
    (Object.keys(POLICIES) as RateLimitedAnswer[]).flatMap((answer) => {
      const { pattern, example, which } = POLICIES[answer];
      return [
        [
          NAMES[answer].policy,
          {
            description: `The policy: ${which}. \`q\` is its quota, \`w\` its window in seconds.`,
            required: false,
            schema: { type: "string", maxLength: 100, pattern: `^${pattern};q=[0-9]{1,9};w=[0-9]{1,5}$` },
            example: `"${example}";q=${answer === "failedAuthentication" ? 20 : 6000};w=60`,
          },
        ],
        [
          NAMES[answer].state,
          {
            description: `Where the policy stands: \`r\` what is left of its quota, \`t\` the seconds until its window restarts.`,
            required: false,
            schema: { type: "string", maxLength: 100, pattern: `^${pattern};r=[0-9]{1,9};t=[0-9]{1,5}$` },
            example: `"${example}";r=${answer === "refused" ? 0 : 17};t=41`,
          },
        ],
      ];
    }),
  );
}

/** The two headers of an answer, as references to their components (`#/components/headers/…`). */
export function rateLimitHeaders(answer: RateLimitedAnswer): Record<string, unknown> {
  return {
    "RateLimit-Policy": { $ref: `#/components/headers/${NAMES[answer].policy}` },
    RateLimit: { $ref: `#/components/headers/${NAMES[answer].state}` },
  };
}
