/**
 * A broker for tests: the named services, in this process, on a database of their own, and a
 * `call` that acts as a given client (as the gateway would after authentication).
 */
import type { ServiceBroker } from "moleculer";
import { SCOPES, type Principal, type RequestMeta, type Scope } from "../../shared/security/auth";
import { loadConfig } from "../../shared/config/config";
import { type ServiceName } from "../../shared/config/variables";
import { createBroker, stopBroker } from "../../runtime/broker";
import { createTestDatabase, type TestDatabase } from "./database";
import { JETSTREAM_API_TIMEOUT_MS, READINESS_CHECK_TIMEOUT_MS } from "./deadlines";
import { TEST_NAMESPACE, TEST_SECRETS_ENCRYPTION_KEYS } from "./processes";

export interface TestBroker {
  broker: ServiceBroker;
  database: TestDatabase;
  call<T = unknown>(action: string, params?: unknown, as?: Principal | null, meta?: Partial<RequestMeta>): Promise<T>;
  stop(): Promise<void>;
}

export interface TestBrokerOptions {
  services: ServiceName[];
  env?: Record<string, string>;
  /** Use this database instead of a new one (several brokers sharing one database). */
  database?: TestDatabase;
}

export async function startTestBroker(opts: TestBrokerOptions): Promise<TestBroker> {
  const database = opts.database ?? (await createTestDatabase());
  const cfg = loadConfig({
    LOG_LEVEL: "warn",
    DATABASE_URL: database.url,
    SERVICES: opts.services.join(","),
    DEMO_DATA: "never",
    RATE_LIMIT_PER_MINUTE: "0",
    // Every test request comes from 127.0.0.1: tests that send bad keys on purpose would block each other.
    AUTH_FAILURES_PER_MINUTE: "0",
    PORT: "0",
    WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
    // The same namespace as the processes this test file spawns (test/helpers/processes.ts).
    NAMESPACE: TEST_NAMESPACE,
    SECRETS_ENCRYPTION_KEYS: TEST_SECRETS_ENCRYPTION_KEYS,
    READINESS_CHECK_TIMEOUT_MS: String(READINESS_CHECK_TIMEOUT_MS),
    JETSTREAM_API_TIMEOUT_MS: String(JETSTREAM_API_TIMEOUT_MS),
    ...opts.env,
  });
  // TEST_BROKER_LOGS=1 shows the brokers' own log lines (silent by default) when a test needs explaining.
  const broker = createBroker(cfg, { logger: process.env.TEST_BROKER_LOGS ? undefined : false });
  if (!opts.services.includes("clients")) {
    broker.createService(CLIENTS_STAND_IN);
    learnCallers(broker);
  }
  await broker.start();
  return {
    broker,
    database,
    call: (action, params = {}, as = ADMIN, meta = {}) =>
      broker.call(action, params as object, { meta: { ...(as ? { client: as } : {}), ...meta } }),
    async stop() {
      await stopBroker(broker);
      if (!opts.database) await database.drop();
    },
  };
}

let nextId = 10_000;
const principals = new Map<number, Principal>();

/** A principal as the gateway would put in ctx.meta.client. */
export function principal(kind: Principal["kind"], scopes: Scope[], clientId = nextId++): Principal {
  const made: Principal = { clientId, name: `${kind}-${clientId}`, kind, scopes, webhookEvents: [] };
  principals.set(clientId, made);
  return made;
}

/**
 * Where a test runs without the clients service: answers `clients.principals` (how other
 * services check that a client they are told about exists, and the webhooks service reads a
 * subscriber's current grants) for the principals made above, as they last called.
 * Over a transporter it serves the test's service processes too.
 */
const CLIENTS_STAND_IN = {
  name: "clients",
  actions: {
    principals: {
      visibility: "public" as const,
      handler: (ctx: { params: { ids: number[] } }) => ctx.params.ids.flatMap((id) => principals.get(id) ?? []),
    },
  },
};

/** A test that calls as `{ ...principal(...), webhookEvents }` gave that client those grants. */
function learnCallers(broker: ServiceBroker): void {
  const call: (action: string, params?: unknown, opts?: { meta?: Partial<RequestMeta> }) => Promise<unknown> =
    broker.call.bind(broker);
  broker.call = (action: string, params?: unknown, opts?: { meta?: Partial<RequestMeta> }) => {
    const client = opts?.meta?.client;
    if (client) principals.set(client.clientId, client);
    return call(action, params, opts);
  };
}

export const ADMIN: Principal = {
  clientId: 1,
  name: "test admin",
  kind: "admin",
  scopes: [...SCOPES],
  webhookEvents: [],
};
