/**
 * Environment the generated end-to-end suites give their cluster. A postgres:// process refuses
 * to start without SECRETS_ENCRYPTION_KEYS (webhook secrets are encrypted at rest); a key of the
 * run's own is enough here, whether or not the process harness sets one by default.
 */
import { randomBytes } from "node:crypto";

export function clusterEnv(): Record<string, string> {
  return { SECRETS_ENCRYPTION_KEYS: `t1:${randomBytes(32).toString("base64")}` };
}
