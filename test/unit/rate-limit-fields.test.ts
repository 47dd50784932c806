import { policyField, secondsUntil, stateField } from "../../gateway/rate-limit-fields";

describe("RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-09)", () => {
  const policy = { name: "default", quota: 6000, windowSeconds: 60 };

  it("when a policy is written, then it is a quoted name with its quota and window", () => {
    expect(policyField(policy)).toBe('"default";q=6000;w=60');
  });

  it("when a state is written, then the remaining quota is never negative and the reset is whole seconds rounded up", () => {
    expect(stateField(policy, { remaining: 42, msBeforeReset: 16_001 })).toBe('"default";r=42;t=17');
    expect(stateField(policy, { remaining: -3, msBeforeReset: 0 })).toBe('"default";r=0;t=0');
  });

  it("when Retry-After is computed, then it is at least one second", () => {
    expect(secondsUntil(0)).toBe(1);
    expect(secondsUntil(1_500)).toBe(2);
  });
});
