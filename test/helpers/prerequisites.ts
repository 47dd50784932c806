/**
 * What a test needs from the machine beyond Node and this repository, and the one way a test
 * skips without it. On a machine that lacks it (a fresh clone, a laptop) the tests that need it
 * are skipped and the reason is recorded, so that `npm test` ends with "skipped N tests: <reason>"
 * (test/helpers/skip-summary-reporter.mjs): never a failure, never a silent skip. In CI (`CI`
 * set) a missing prerequisite fails the test file instead: there it means a broken machine.
 *
 *   const servers = requires(["postgres", "nats-server"]);
 *   servers.describe("webhooks under faults", () => { ... });
 *
 * A server named in TEST_DATABASE_URL or TEST_NATS_URL that does not answer counts as missing:
 * the global setup asks once (`checkTestServers`) and, outside CI, unsets the variable, so that
 * every other test falls back to the embedded mode instead of failing on a refused connection.
 */
import { appendFileSync, existsSync } from "node:fs";
import net from "node:net";
import { kubectlKustomizeMissing } from "./kustomize";
import { natsServerAvailable } from "./nats-server";

export type Prerequisite = "postgres" | "nats" | "nats-server" | "chromium" | "kubectl";

/** Debian's chromium, which the browser tests drive with playwright-core. */
export const CHROMIUM = "/usr/bin/chromium";

/** Set by the reporter (skip-summary-reporter.mjs): the file each skipped test file records its reasons in. */
const SKIPS_FILE_VARIABLE = "OI_TEST_SKIPS_FILE";
/** Set by checkTestServers for the workers: `{ TEST_DATABASE_URL: "<url>" }` for each server that did not answer. */
const SILENT_SERVERS_VARIABLE = "OI_TEST_SILENT_SERVERS";

const SERVERS = {
  postgres: { variable: "TEST_DATABASE_URL", what: "PostgreSQL", defaultPort: 5432 },
  nats: { variable: "TEST_NATS_URL", what: "NATS with JetStream", defaultPort: 4222 },
} as const;

export const inCI = (): boolean => Boolean(process.env.CI) && process.env.CI !== "false";

/** A URL as it may be printed: without its password. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url;
  }
}

function silentServers(): Record<string, string> {
  return JSON.parse(process.env[SILENT_SERVERS_VARIABLE] ?? "{}") as Record<string, string>;
}

function serverMissing(server: keyof typeof SERVERS): string | null {
  const { variable, what } = SERVERS[server];
  if (process.env[variable]) return null;
  const silent = silentServers()[variable];
  return silent
    ? `needs ${what}: ${variable}=${shown(silent)} does not answer`
    : `needs ${what}: ${variable} is not set`;
}

/** Why each prerequisite is missing on this machine (empty when all are there). */
export function missingPrerequisites(needs: readonly Prerequisite[]): string[] {
  const reasons = needs.map((need) => {
    switch (need) {
      case "postgres":
      case "nats":
        return serverMissing(need);
      case "nats-server":
        return natsServerAvailable()
          ? null
          : "needs the nats-server binary: not on PATH (apt-get install nats-server, or set NATS_SERVER_BINARY)";
      case "chromium":
        return existsSync(CHROMIUM) ? null : `needs chromium at ${CHROMIUM} (apt-get install chromium)`;
      case "kubectl":
        return kubectlKustomizeMissing();
    }
  });
  return reasons.filter((r): r is string => r !== null);
}

function recordSkip(reasons: string[]): void {
  const testPath = expect.getState().testPath ?? "(unknown test file)";
  const file = process.env[SKIPS_FILE_VARIABLE];
  if (file) appendFileSync(file, `${JSON.stringify({ testPath, reasons })}\n`);
  else console.log(`[tests] skipped ${testPath}: ${reasons.join("; ")}`);
}

export interface Requirement {
  /** Every prerequisite is there: the tests run. */
  met: boolean;
  /** `describe`, or `describe.skip` when something is missing. */
  describe: jest.Describe;
  /** `it`, or `it.skip` when something is missing. */
  it: jest.It;
}

/**
 * Call at the top of a test file. Outside CI, a missing prerequisite skips what is declared
 * through the result and records why; in CI it throws, failing the file.
 */
export function requires(needs: readonly Prerequisite[]): Requirement {
  const reasons = missingPrerequisites(needs);
  if (reasons.length === 0) return { met: true, describe, it };
  if (inCI())
    throw new Error(
      `[tests] ${reasons.join("; ")}. CI must provide it: a missing prerequisite there is a broken machine, never a reason to skip.`,
    );
  recordSkip(reasons);
  return { met: false, describe: describe.skip, it: it.skip };
}

function answers(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({
      host: hostname.replace(/^\[|\]$/g, ""),
      port: Number(port) || defaultPort,
      timeout: 2_000,
    });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

/**
 * For the global setup: each server named in TEST_DATABASE_URL / TEST_NATS_URL must answer.
 * In CI one that does not fails the run; elsewhere its variable is unset for this run (the
 * workers inherit the environment) and the tests that need it say so in the summary.
 */
export async function checkTestServers(): Promise<void> {
  const silent: Record<string, string> = {};
  for (const { variable, what, defaultPort } of Object.values(SERVERS)) {
    const url = process.env[variable];
    if (!url || (await answers(url, defaultPort))) continue;
    if (inCI()) throw new Error(`${variable}=${shown(url)} does not answer: CI needs ${what} running.`);
    silent[variable] = url;
    delete process.env[variable];
    console.log(
      `[tests] ${variable}=${shown(url)} does not answer: the tests that need ${what} are skipped, the others use the embedded mode.`,
    );
  }
  if (Object.keys(silent).length > 0) process.env[SILENT_SERVERS_VARIABLE] = JSON.stringify(silent);
}
