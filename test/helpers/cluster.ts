/**
 * The distributed mode for end-to-end tests: migrations applied once, then the gateway and
 * every service each in its own process over NATS, on a database of their own — as Kubernetes
 * pods would run. Without TEST_NATS_URL and a real PostgreSQL it falls back to one embedded
 * process (all services, no transporter) and says so.
 */
import { randomBytes } from "node:crypto";
import { ALL_SERVICES, type ServiceName } from "../../shared/config/variables";
import { migrateAll } from "../../runtime/migrations";
import { openDatabase, closeDatabase } from "../../shared/database/db";
import { createTestDatabase, type TestDatabase } from "./database";
import { disposeAll, ServiceProcess } from "./processes";
import { createApiWorld, type ApiWorld } from "./api-fixtures";
import { api, type ApiClient } from "./http";

/** Longer than the broker's serviceChangedDebounceTime (moleculer.config.ts). */
const ANNOUNCE_MS = 500;

export interface Cluster {
  baseUrl: string;
  adminKey: string;
  databaseUrl: string;
  /** Every process by service name (the embedded fallback has one process, under "gateway"). */
  processes: Map<ServiceName, ServiceProcess[]>;
  distributed: boolean;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Processes per service (1 by default). */
  replicas?: Partial<Record<ServiceName, number>>;
  /** Extra environment for every process. */
  env?: Record<string, string>;
  /** NATS for the processes instead of TEST_NATS_URL: a private server a fault test can restart. */
  natsUrl?: string;
  /** The database URL handed to the processes, from the test database's (e.g. through a TCP relay). */
  processDatabaseUrl?: (url: string) => string;
}

async function migrated(database: TestDatabase): Promise<void> {
  await migrateAll(openDatabase(database.url));
  await closeDatabase(database.url);
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const database = await createTestDatabase();
  const natsUrl = options.natsUrl ?? process.env.TEST_NATS_URL;
  const adminKey = `admin-e2e-${randomBytes(16).toString("hex")}`;
  const env = { ADMIN_API_KEY: adminKey, ...options.env };
  const processes = new Map<ServiceName, ServiceProcess[]>();
  const distributed = Boolean(natsUrl) && database.kind !== "pglite";

  try {
    if (!distributed) {
      console.log("[e2e] no real NATS/PostgreSQL: running the embedded mode (one process, all services)");
      const one = await ServiceProcess.create({
        name: "embedded",
        services: [...ALL_SERVICES],
        databaseUrl: database.url,
        env,
      });
      processes.set("gateway", [one]);
      await one.start();
    } else {
      await migrated(database);
      for (const service of ALL_SERVICES) {
        const count = options.replicas?.[service] ?? 1;
        const created: ServiceProcess[] = [];
        for (let i = 1; i <= count; i++) {
          created.push(
            await ServiceProcess.create({
              name: `${service}-${i}`,
              services: [service],
              transporter: natsUrl,
              databaseUrl: options.processDatabaseUrl?.(database.url) ?? database.url,
              env: { ...env, MIGRATE_ON_START: "false" },
            }),
          );
        }
        processes.set(service, created);
      }
      // Services first, then the gateway, so that its first requests find them.
      // First replicas, then the others: two replicas creating the same durable JetStream consumer
      // at the same instant make one fail to start ("consumer name already in use").
      const services = [...processes.entries()].filter(([s]) => s !== "gateway").map(([, ps]) => ps);
      await Promise.all(services.map((ps) => ps[0]?.start()));
      await Promise.all(services.flatMap((ps) => ps.slice(1).map((p) => p.start())));
      await Promise.all(processes.get("gateway")!.map((p) => p.start()));
      await waitForServices(processes.get("gateway")![0].baseUrl, adminKey);
      // The gateway's own listeners (clients.changed) reach the other nodes once its service
      // list is announced, which moleculer debounces (transit.serviceChangedDebounceTime).
      await new Promise((r) => setTimeout(r, ANNOUNCE_MS));
    }
  } catch (err) {
    await disposeAll([...processes.values()].flat());
    await database.drop();
    throw err;
  }

  return {
    baseUrl: processes.get("gateway")![0].baseUrl,
    adminKey,
    databaseUrl: database.url,
    processes,
    distributed,
    async stop() {
      await disposeAll([...processes.values()].flat());
      await database.drop();
    },
  };
}

/** The gateway is ready before it has discovered every remote service: wait until it has. */
async function waitForServices(baseUrl: string, adminKey: string): Promise<void> {
  const probes = [
    "/api/v1/clients?limit=1",
    "/api/v1/contacts?limit=1",
    "/api/v1/packagings?limit=1",
    "/api/v1/orders?limit=1",
    "/api/v1/packaging_references?limit=1",
    "/api/v1/webhooks",
  ];
  const deadline = Date.now() + 30_000;
  for (const probe of probes) {
    for (;;) {
      const status = await fetch(baseUrl + probe, { headers: { Authorization: `Bearer ${adminKey}` } }).then(
        (r) => r.status,
        () => 0,
      );
      // 200 or 403 (the admin may lack a scope) both prove the action was found.
      if (status !== 0 && status !== 404 && status !== 503) break;
      if (Date.now() > deadline)
        throw new Error(`the gateway did not discover the service behind ${probe} (last status ${status})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A started cluster with an API world (api-fixtures.ts) and the callers the e2e tests use. */
export interface ClusterWorld {
  cluster: Cluster;
  admin: ApiClient;
  world: ApiWorld;
  partner: ApiClient;
  otherPartner: ApiClient;
  backoffice: ApiClient;
}

/** Starts the cluster and creates its world: what most e2e files do in their beforeAll. */
export async function startClusterWorld(options: ClusterOptions = {}): Promise<ClusterWorld> {
  const cluster = await startCluster(options);
  const admin = api(cluster.baseUrl).as(cluster.adminKey);
  const world = await createApiWorld(admin);
  return {
    cluster,
    admin,
    world,
    partner: admin.as(world.partnerKey),
    otherPartner: admin.as(world.otherPartnerKey),
    backoffice: admin.as(world.backofficeKey),
  };
}
