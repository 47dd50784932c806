/**
 * Asymmetric matchers that keep the received value in a failure message, where a boolean
 * (`expect(s.startsWith(p)).toBe(true)`) would only say "expected true, received false".
 */
/** A string that begins with `prefix`, taken literally. */
export function startingWith(prefix: string) {
  return expect.stringMatching(new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
}
