/**
 * A refused setting names the variable, the value it had and what it takes, in one line; a
 * secret's value is never repeated.
 */
import { ConfigError, loadConfig } from "../../shared/config/config";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("when a setting is refused", () => {
  it.each([
    [{ PORT: "abc" }, 'PORT="abc" is not valid: expected a whole number'],
    [{ PORT: "70000" }, 'PORT="70000" is not valid: expected a whole number from 0 to 65535'],
    [{ REQUEST_TIMEOUT_MS: "5" }, 'REQUEST_TIMEOUT_MS="5" is not valid: expected a whole number of at least 100'],
    [{ LOG_LEVEL: "loud" }, 'LOG_LEVEL="loud" is not valid: expected one of fatal, error, warn, info, debug, trace'],
    [
      { WEBHOOK_ALLOW_INSECURE_TARGETS: "maybe" },
      'WEBHOOK_ALLOW_INSECURE_TARGETS="maybe" is not valid: expected true or false',
    ],
    [
      { WEBHOOK_RETENTION: "3weeks" },
      'WEBHOOK_RETENTION="3weeks" is not valid: expected a duration such as 500ms, 30s, 15m, 12h or 30d',
    ],
    [{ NAMESPACE: "a.b" }, 'NAMESPACE="a.b" is not valid: expected 1 to 64 of A-Z a-z 0-9 _ -'],
    [
      { TRUST_PROXY: "10.0.0.0/8,nope" },
      'TRUST_PROXY="10.0.0.0/8,nope" is not valid: expected comma-separated IP addresses or CIDR ranges (10.0.0.0/8)',
    ],
    [
      { TRANSPORTER: "redis://x", DATABASE_URL: "postgres://db/x" },
      'TRANSPORTER="redis://x" is not valid: expected nothing (embedded) or a nats:// URL',
    ],
    [
      { TRANSPORTER: "nats://n:4222", DATABASE_URL: "pglite://.data" },
      'DATABASE_URL="pglite://.data" is not valid: expected a postgres:// URL when TRANSPORTER is set (an embedded PGlite database cannot be shared between processes)',
    ],
    [
      { DATABASE_URL: "mysql://x" },
      'DATABASE_URL="mysql://x" is not valid: expected a postgres:// URL, or pglite://<folder> or pglite://memory',
    ],
    [
      { WEBHOOK_RETRY_SCHEDULE: "10,x" },
      'WEBHOOK_RETRY_SCHEDULE="10,x" is not valid: expected a comma-separated list of seconds (10,60,300)',
    ],
  ])("then %j reads as one line naming the variable, the value and what it takes", (env, line) => {
    expect(problemsOf(env)).toEqual([line]);
  });

  it("then a secret's value is not repeated, only its length", () => {
    const problems = problemsOf({ ADMIN_API_KEY: "oik_short-secret" });
    expect(problems).toEqual([
      "ADMIN_API_KEY=(16 characters, not shown) is not valid: expected at least 24 characters, or nothing",
    ]);
    expect(problems.join("\n")).not.toContain("short-secret");
  });
});
