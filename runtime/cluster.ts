/**
 * `npm run start:cluster`: the distributed mode on one machine, as Kubernetes runs it. Checks
 * that NATS (with JetStream) and PostgreSQL answer, creates the database when missing, runs
 * the migrations once, then starts the gateway and each service as a process of its own
 * (`SERVICES=<name>`, `MIGRATE_ON_START=false`), like one pod per Deployment. Without
 * SECRETS_ENCRYPTION_KEYS every process gets the local data folder's development key, so that
 * it works out of the box; a deployment sets the variable itself.
 */
import os from "node:os";
import path from "node:path";
import { connect } from "nats";
import { ConfigError, environmentWith, loadConfig, setConfig, type Config } from "../shared/config/config";
import { type ServiceName } from "../shared/config/variables";
import { localDevelopmentKeyEntry, SECRETS_VARIABLE, useProcessKeys } from "../shared/security/secrets-keyring";
import { SERVICE_NODE_OPTIONS } from "./process-limits";
import { closeDatabase, openDatabase } from "../shared/database/db";
import { describeDatabaseUrl, ensurePostgresDatabase } from "./database-setup";
import { errorText } from "./error-text";
import { migrateAll } from "./migrations";
import { seedClusterDemo } from "./demo/cluster-demo";
import { runProcessGroup, type ChildSpec } from "./process-group";

/** Where a developer's NATS and PostgreSQL usually are (e.g. Debian's nats-server and postgresql). */
const LOCAL_DEFAULTS = {
  TRANSPORTER: "nats://127.0.0.1:4222",
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/order_intake",
};

const log = (line: string) => console.log(`[cluster] ${line}`);

class PreflightError extends Error {}

/**
 * NATS answers, with JetStream. TRANSPORTER may list the servers of a cluster, separated by
 * commas: the processes connect to any that answers, and so does this check.
 */
async function checkNats(transporter: string): Promise<void> {
  const servers = transporter
    .split(",")
    .map((url) => url.trim())
    .filter(Boolean);
  let nc;
  try {
    nc = await connect({ servers, timeout: 3_000, reconnect: false });
  } catch (err) {
    throw new PreflightError(
      `No NATS server answers at ${servers.join(", ")} (${errorText(err)}). Start one with \`nats-server -js\` or set TRANSPORTER.`,
    );
  }
  const where = nc.getServer();
  const jetstream = nc.info?.jetstream === true;
  await nc.close();
  if (!jetstream)
    throw new PreflightError(`The NATS server at ${where} runs without JetStream: restart it with \`-js\`.`);
}

async function prepareDatabase(url: string): Promise<void> {
  try {
    if (await ensurePostgresDatabase(url)) log(`created database ${describeDatabaseUrl(url)}`);
  } catch (err) {
    throw new PreflightError(
      `PostgreSQL at ${describeDatabaseUrl(url)} cannot be used (${errorText(err)}). Start it or set DATABASE_URL.`,
    );
  }
  try {
    await migrateAll(openDatabase(url, 1), (line) => log(`migrations: ${line}`));
  } finally {
    await closeDatabase();
  }
}

/** One process per service, configured as its own Deployment would be. */
function childSpecs(cfg: Config, developmentKey: string | null): ChildSpec[] {
  const entry = path.join(__dirname, "start.js");
  let nextHealthPort = cfg.healthPort;
  return cfg.services.map((name: ServiceName) => {
    // Every process, the gateway's too, answers probes and /metrics on HEALTH_PORT; on one machine each needs its own.
    const healthPort = cfg.healthPort > 0 ? nextHealthPort++ : 0;
    return {
      name,
      command: process.execPath,
      args: [entry],
      env: {
        ...environmentWith({
          SERVICES: name,
          MIGRATE_ON_START: "false",
          TRANSPORTER: cfg.transporter ?? "",
          DATABASE_URL: cfg.databaseUrl,
          NODE_ID: `${cfg.nodeId || os.hostname()}-${name}`,
          HEALTH_PORT: String(healthPort),
          ...(developmentKey ? { [SECRETS_VARIABLE]: developmentKey } : {}),
        }),
        NODE_OPTIONS: SERVICE_NODE_OPTIONS,
      },
    };
  });
}

function describePlan(cfg: Config, specs: ChildSpec[]): void {
  log(`NATS ${cfg.transporter}, PostgreSQL ${describeDatabaseUrl(cfg.databaseUrl)}`);
  for (const spec of specs) {
    const ports = [
      spec.name === "gateway" ? `http://127.0.0.1:${cfg.port}/api/v1` : "",
      Number(spec.env.HEALTH_PORT) > 0 ? `health on :${spec.env.HEALTH_PORT}` : "",
    ].filter(Boolean);
    log(`starting ${spec.name}${ports.length > 0 ? ` (${ports.join(", ")})` : ""}`);
  }
  if (!cfg.adminApiKey) {
    log(
      "no ADMIN_API_KEY: create a client with `npm run -s cli -- clients create --name me --kind admin` and the same DATABASE_URL",
    );
  }
}

/**
 * The configuration, with the development key when SECRETS_ENCRYPTION_KEYS is unset (said in one
 * line); it is also the process-wide one, so the migrations seal with the same keys as the children.
 */
function clusterConfig(): { cfg: Config; developmentKey: string | null } {
  const configured = loadConfig(undefined, LOCAL_DEFAULTS);
  if (configured.secretsEncryptionKeys.length > 0) {
    setConfig(configured);
    useProcessKeys(configured);
    return { cfg: configured, developmentKey: null };
  }
  const developmentKey = localDevelopmentKeyEntry((line) =>
    log(
      `${line} Every process of this cluster uses it; production must set ${SECRETS_VARIABLE} (docs/operations.md, "Secrets at rest").`,
    ),
  );
  const cfg = loadConfig(undefined, { ...LOCAL_DEFAULTS, [SECRETS_VARIABLE]: developmentKey });
  setConfig(cfg);
  useProcessKeys(cfg);
  return { cfg, developmentKey };
}

async function main(): Promise<number> {
  const { cfg, developmentKey } = clusterConfig();
  if (!cfg.transporter) throw new PreflightError("TRANSPORTER is empty: the cluster needs NATS (nats://host:4222).");
  await checkNats(cfg.transporter);
  await prepareDatabase(cfg.databaseUrl);
  const specs = childSpecs(cfg, developmentKey);
  describePlan(cfg, specs);
  const group = runProcessGroup(specs, {
    killAfterMs: cfg.shutdownTimeoutMs + 10_000,
    log,
    colors: process.stdout.isTTY === true,
  });
  // Not awaited: the group's end (a signal, a child that died) ends the runner, seeding or not.
  void seedClusterDemo(cfg, log);
  return group;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(
      err instanceof ConfigError || err instanceof PreflightError ? err.message : `Failed: ${errorText(err)}`,
    );
    process.exit(1);
  },
);
