/**
 * The container image's HEALTHCHECK: GET /healthz of this process, on PORT when it runs the
 * gateway, else on HEALTH_PORT. Exit 0 when it answers 200, 1 otherwise (Docker's contract).
 */
import { config, type Config } from "../shared/config/config";
import { errorText } from "./error-text";

const TIMEOUT_MS = 3_000;

/** Where this process serves /healthz, or null when it serves none (HEALTH_PORT=0). */
export function healthzUrl(cfg: Config): string | null {
  const port = cfg.services.includes("gateway") ? cfg.port : cfg.healthPort;
  return port > 0 ? `http://127.0.0.1:${port}/healthz` : null;
}

async function main(): Promise<number> {
  const url = healthzUrl(config());
  if (!url) {
    console.error("unhealthy: this process serves no health endpoint (no gateway, HEALTH_PORT=0)");
    return 1;
  }
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (res.status === 200) return 0;
    console.error(`unhealthy: ${url} answered ${res.status}`);
  } catch (err) {
    console.error(`unhealthy: ${url} did not answer (${errorText(err)})`);
  }
  return 1;
}

void main().then(
  (code) => process.exit(code),
  () => process.exit(1),
);
