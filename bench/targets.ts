/**
 * The four things the benchmark measures, each deployed from dist/ on fresh storage, seeded
 * through the real API, and torn down afterwards (processes stopped, database dropped):
 *
 *  embedded           one process, every service, no transporter, PGlite in a temporary folder
 *  embedded-postgres  the same process on PostgreSQL
 *  distributed        the gateway and each service in its own process, over NATS, on PostgreSQL
 *  baseline           bench/baseline-server.ts (node:http + pg) on a database seeded like the others
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { environmentWith } from "../shared/config/config";
import { ALL_SERVICES, type ServiceName, type VariableName } from "../shared/config/variables";
import { EMBEDDED_NODE_FLAGS, SERVICE_NODE_FLAGS } from "../runtime/process-limits";
import { newEncryptionKeyEntry } from "../shared/security/secret-box";
import { createFreshDatabase, type FreshDatabase } from "./databases";
import { benchNamespace, deleteNamespaceStreams } from "./nats-namespace";
import type { BenchOptions, TargetId } from "./options";
import { BenchProcess, dist, freePort, freePorts, stopAll, waitUntilReady } from "./processes";
import { seedThroughApi, type SeededPartner } from "./seed";

export interface Deployment {
  baseUrl: string;
  /** The processes that serve the load: their peak RSS is reported. */
  processes: BenchProcess[];
  partner: SeededPartner;
  /** The PostgreSQL database it uses (its backends' CPU is counted), if any. */
  databaseName?: string;
  /** The NATS server's port when it is part of the target (its CPU is counted). */
  natsPort?: string;
  /** Stops everything and removes the storage (database, PGlite folder, JetStream streams). */
  tearDown(): Promise<void>;
}

export interface TargetSpec {
  id: TargetId;
  label: string;
  description: string;
  deploy(run: RunContext): Promise<Deployment>;
}

export interface RunContext {
  options: BenchOptions;
  /** Unique per run: database names and node ids carry it. */
  runId: string;
  /** Node options for the processes under test (the profiler, with --cpu-prof). */
  nodeArgs: string[];
  /** With --cpu-prof, where the processes write their profiles. */
  profileDir?: string;
}

const START = dist("runtime/start.js");
/** One key for every process of a run: they read each other's stored webhook secrets. */
const SECRETS_ENCRYPTION_KEYS = newEncryptionKeyEntry("bench");

/**
 * Connections per process: the distributed target runs seven processes on one PostgreSQL server
 * (max_connections 100) that others share; 5 each leaves room, and the baseline gets the same.
 */
export const BENCH_POOL_MAX = "5";

/** What every process of the services gets: the benchmark's protocol (no rate limit, warn logs, pools of BENCH_POOL_MAX). */
function serviceEnvironment(overrides: Partial<Record<VariableName, string>>): NodeJS.ProcessEnv {
  return environmentWith({
    DATABASE_POOL_MAX: BENCH_POOL_MAX,
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    DEMO_DATA: "never",
    RATE_LIMIT_PER_MINUTE: "0",
    HOST: "127.0.0.1",
    HEALTH_PORT: "0",
    TRANSPORTER: "",
    SERVICES: ALL_SERVICES.join(","),
    MIGRATE_ON_START: "true",
    SECRETS_ENCRYPTION_KEYS,
    ...overrides,
  });
}

const newAdminKey = () => `bench-admin-${randomBytes(24).toString("hex")}`;

/** One process with every service (the embedded mode), ready and seeded. */
async function startEmbedded(
  databaseUrl: string,
  nodeArgs: string[] = [],
): Promise<{ process: BenchProcess; baseUrl: string; partner: SeededPartner }> {
  const port = await freePort();
  const adminKey = newAdminKey();
  // The flags `npm start` runs it with (package.json).
  const embedded = BenchProcess.start(
    "embedded",
    START,
    serviceEnvironment({ DATABASE_URL: databaseUrl, PORT: String(port), ADMIN_API_KEY: adminKey }),
    [],
    [...EMBEDDED_NODE_FLAGS, ...nodeArgs],
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(embedded, `${baseUrl}/readyz`);
    return { process: embedded, baseUrl, partner: await seedThroughApi(baseUrl, adminKey) };
  } catch (err) {
    await embedded.stop();
    throw withOutputOf([embedded], err);
  }
}

/** The error, with what the processes printed (LOG_LEVEL=warn: only warnings and errors). */
function withOutputOf(processes: BenchProcess[], err: unknown): Error {
  const printed = processes.filter((p) => p.linesWritten > 0).map((p) => `--- ${p.name} ---\n${p.output()}`);
  const message = err instanceof Error ? err.message : String(err);
  return printed.length === 0 ? new Error(message) : new Error(`${message}\n${printed.join("\n")}`);
}

/** Runs `work` on a fresh database, dropping it if `work` fails. */
/** `oi_bench_<run>_<suffix>`: whose database it is, so an interrupted run's can be found and dropped. */
export const benchDatabaseName = (runId: string, suffix: string) => `oi_bench_${runId}_${suffix}`;

/** A run's id, unique per run (databases, namespaces and node ids carry it): `<yyyymmdd>_<6 hex>`. */
export const newRunId = (startedAt: string) =>
  `${startedAt.slice(0, 10).replace(/-/g, "")}_${randomBytes(3).toString("hex")}`;

async function withFreshDatabase<T>(
  run: { runId: string; options: Pick<BenchOptions, "postgresUrl"> },
  suffix: string,
  work: (db: FreshDatabase) => Promise<T>,
): Promise<T> {
  const db = await createFreshDatabase(run.options.postgresUrl, benchDatabaseName(run.runId, suffix));
  try {
    return await work(db);
  } catch (err) {
    await db.drop();
    throw err;
  }
}

const embeddedPglite: TargetSpec = {
  id: "embedded",
  label: "(a) embedded, PGlite",
  description:
    "npm start: one process running every service, no transporter, PGlite (PostgreSQL in WebAssembly) in a temporary data folder.",
  async deploy(run) {
    const folder = mkdtempSync(path.join(os.tmpdir(), "orders-bench-pglite-"));
    try {
      const { process, baseUrl, partner } = await startEmbedded(`pglite://${folder}`, run.nodeArgs);
      return {
        baseUrl,
        partner,
        processes: [process],
        async tearDown() {
          await process.stop();
          rmSync(folder, { recursive: true, force: true });
        },
      };
    } catch (err) {
      rmSync(folder, { recursive: true, force: true });
      throw err;
    }
  },
};

const embeddedPostgres: TargetSpec = {
  id: "embedded-postgres",
  label: "(a′) embedded, PostgreSQL",
  description:
    "The same single process with every service and no transporter, on the local PostgreSQL instead of PGlite.",
  deploy: (run) =>
    withFreshDatabase(run, "embedded", async (db) => {
      const { process, baseUrl, partner } = await startEmbedded(db.url, run.nodeArgs);
      return {
        baseUrl,
        partner,
        processes: [process],
        databaseName: db.name,
        async tearDown() {
          await process.stop();
          await db.drop();
        },
      };
    }),
};

/** Started first; the gateway comes once they are ready, so that it finds them on NATS at once. */
const BACKEND_SERVICES = ALL_SERVICES.filter((name) => name !== "gateway");

/** What a distributed deployment needs from a run (the orders bench's RunContext is one). */
export interface DistributedRun {
  runId: string;
  nodeArgs: string[];
  options: Pick<BenchOptions, "postgresUrl" | "natsUrl">;
}

/** How a benchmark wants the distributed mode laid out; by default one process per service. */
export interface DistributedLayout {
  /** Names the NATS namespace (`<bench>-bench-<run>`) and the database (`oi_bench_<run>_<bench>`). */
  bench: string;
  /** Processes per service (default 1); several are named `<service>-1`, `<service>-2`... */
  replicas?: Partial<Record<ServiceName, number>>;
  /** Extra settings for every process (e.g. WEBHOOK_ALLOW_INSECURE_TARGETS). */
  environment?: Partial<Record<VariableName, string>>;
}

export interface DistributedDeployment extends Deployment {
  /** The admin client's key (ADMIN_API_KEY), for benchmarks that create more clients. */
  adminKey: string;
  namespace: string;
}

/** The orders bench's distributed database keeps its name (`…_distributed`); other benchmarks' carry theirs. */
export const distributedDatabaseSuffix = (bench: string) => (bench === "orders" ? "distributed" : bench);

/** Each service's process names, in start order: `webhooks`, or `webhooks-1`, `webhooks-2` with replicas. */
function memberNames(layout: DistributedLayout): { service: ServiceName; name: string }[] {
  return BACKEND_SERVICES.flatMap((service) => {
    const count = layout.replicas?.[service] ?? 1;
    return Array.from({ length: count }, (_, i) => ({ service, name: count === 1 ? service : `${service}-${i + 1}` }));
  });
}

/**
 * The gateway and each service in its own process(es) over the machine's NATS in a namespace of
 * the run's own, on a fresh PostgreSQL database migrated once before; seeded through the API.
 */
export function deployDistributed(
  run: DistributedRun,
  layout: DistributedLayout = { bench: "orders" },
): Promise<DistributedDeployment> {
  return withFreshDatabase(run, distributedDatabaseSuffix(layout.bench), async (db) => {
    await BenchProcess.start(
      "migrate",
      dist("runtime/migrate.js"),
      serviceEnvironment({ DATABASE_URL: db.url }),
    ).finished();
    const namespace = benchNamespace(run.runId, layout.bench);
    const adminKey = newAdminKey();
    const backends = memberNames(layout);
    const [port, ...probePorts] = await freePorts(backends.length + 1);
    const members: BenchProcess[] = [];
    const startMember = async (service: ServiceName, name: string, probePort: number) => {
      const member = BenchProcess.start(
        name,
        START,
        serviceEnvironment({
          ...layout.environment,
          SERVICES: service,
          NAMESPACE: namespace,
          TRANSPORTER: run.options.natsUrl,
          DATABASE_URL: db.url,
          MIGRATE_ON_START: "false",
          NODE_ID: `bench-${name}`,
          ADMIN_API_KEY: adminKey,
          PORT: String(port),
          HEALTH_PORT: service === "gateway" ? "0" : String(probePort),
          // Every process's /metrics, the gateway's on its one port (bench/process-metrics.ts).
          ...(service === "gateway" ? { METRICS_ON_PUBLIC_PORT: "true" } : {}),
        }),
        [],
        [...SERVICE_NODE_FLAGS, ...run.nodeArgs],
      ); // the flags the image and start:cluster use
      member.metricsUrl = `http://127.0.0.1:${probePort}/metrics`;
      members.push(member);
      await waitUntilReady(member, `http://127.0.0.1:${probePort}/readyz`);
    };
    try {
      await Promise.all(backends.map(({ service, name }, i) => startMember(service, name, probePorts[i])));
      await startMember("gateway", "gateway", port);
      const baseUrl = `http://127.0.0.1:${port}`;
      const processes = [...members];
      return {
        baseUrl,
        processes,
        databaseName: db.name,
        natsPort: new URL(run.options.natsUrl).port || "4222",
        adminKey,
        namespace,
        partner: await seedThroughApi(baseUrl, adminKey),
        async tearDown() {
          // The gateway first: it drains the requests still in flight, which need every service.
          await stopAll(processes.filter((p) => p.name === "gateway"));
          await stopAll(processes);
          await deleteNamespaceStreams(run.options.natsUrl, namespace);
          await db.drop();
        },
      };
    } catch (err) {
      await stopAll(members);
      await deleteNamespaceStreams(run.options.natsUrl, namespace);
      throw withOutputOf(members, err);
    }
  });
}

const distributed: TargetSpec = {
  id: "distributed",
  label: "(b) distributed, NATS + PostgreSQL",
  description:
    "The gateway and each service (clients, crm, catalogue, references, orders, webhooks) in its own process (SERVICES=<name>), over the machine's NATS in a namespace of the run's own, on the local PostgreSQL; migrations run once before (dist/runtime/migrate.js).",
  deploy: (run) => deployDistributed(run),
};

const baseline: TargetSpec = {
  id: "baseline",
  label: "(c) baseline, node:http + pg",
  description:
    "bench/baseline-server.ts: a bare node:http server with a pg pool (DATABASE_POOL_MAX connections) running the same SQL statements for the same payload, with no framework, authentication, validation or messaging. Its database is migrated and seeded by the embedded mode through the API, which is then stopped.",
  deploy: (run) =>
    withFreshDatabase(run, "baseline", async (db) => {
      const seeder = await startEmbedded(db.url);
      await seeder.process.stop();
      const port = await freePort();
      const server = BenchProcess.start(
        "baseline",
        dist("bench/baseline-server.js"),
        serviceEnvironment({ DATABASE_URL: db.url, PORT: String(port) }),
        ["--client-id", String(seeder.partner.clientId)],
        run.nodeArgs,
      );
      const baseUrl = `http://127.0.0.1:${port}`;
      try {
        await waitUntilReady(server, `${baseUrl}/healthz`);
      } catch (err) {
        await server.stop();
        throw err;
      }
      return {
        baseUrl,
        partner: seeder.partner,
        processes: [server],
        databaseName: db.name,
        async tearDown() {
          await server.stop();
          await db.drop();
        },
      };
    }),
};

export const TARGETS: Record<TargetId, TargetSpec> = {
  embedded: embeddedPglite,
  "embedded-postgres": embeddedPostgres,
  distributed,
  baseline,
};
