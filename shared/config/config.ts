/**
 * The one reader of process.env. `loadConfig()` validates the environment against `VARIABLES`
 * (shared/config/variables.ts: name, type, default, description) and fails at start with a
 * message naming each bad variable.
 */
import Validator from "fastest-validator";
import { parseEncryptionKeys, type EncryptionKey } from "../security/secret-box";
import {
  ALL_SERVICES,
  DURATION_PATTERN,
  durationMs,
  VARIABLES,
  type ServiceName,
  type Variable,
  type VariableName,
} from "./variables";

export interface Config {
  env: string;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace";
  nodeId: string;
  namespace: string;
  services: ServiceName[];
  transporter: string | null;
  /** JETSTREAM_REPLICAS: "auto" fits the NATS cluster (shared/messaging/jetstream-streams.ts). */
  jetstreamReplicas: "auto" | number;
  /** JETSTREAM_API_TIMEOUT_MS */
  jetstreamApiTimeoutMs: number;
  databaseUrl: string;
  databasePoolMax: number;
  migrateOnStart: boolean;
  demoData: "auto" | "always" | "never";
  adminApiKey: string | null;
  host: string;
  port: number;
  publicBaseUrl: string;
  requestTimeoutMs: number;
  rateLimitPerMinute: number;
  authFailuresPerMinute: number;
  /** TRUST_PROXY: addresses and CIDR ranges, as written. */
  trustProxy: string[];
  shutdownTimeoutMs: number;
  healthPort: number;
  /** READINESS_CHECK_TIMEOUT_MS */
  readinessCheckTimeoutMs: number;
  /** METRICS_ON_PUBLIC_PORT */
  metricsOnPublicPort: boolean;
  outboxRelayIntervalMs: number;
  /** OUTBOX_STALLED_AFTER */
  outboxStalledAfterMs: number;
  /** SECRETS_ENCRYPTION_KEYS, parsed; shared/security/secrets-keyring.ts decides what an empty list means. */
  secretsEncryptionKeys: EncryptionKey[];
  webhooks: {
    allowInsecureTargets: boolean;
    timeoutMs: number;
    retryScheduleSeconds: number[];
    dispatchBatch: number;
    endpointConcurrency: number;
    dispatchIntervalMs: number;
    /** WEBHOOK_SECRET_OVERLAP */
    secretOverlapMs: number;
    /** WEBHOOK_RETRY_AFTER_MAX */
    retryAfterMaxMs: number;
    /** WEBHOOK_DISABLE_AFTER */
    disableAfterMs: number;
    /** WEBHOOK_RETENTION */
    retentionMs: number;
    /** WEBHOOK_ORDERING_HOLD */
    orderingHoldMs: number;
  };
  portal: {
    /** PORTAL_LINK_TTL */
    linkTtlMs: number;
    /** PORTAL_SESSION_TTL */
    sessionTtlMs: number;
    /** PORTAL_KEY_SIGN_IN, with auto decided by NODE_ENV. */
    keySignIn: boolean;
    /** PORTAL_FRAME_ANCESTORS */
    frameAncestors: string[];
  };
  /** OUTBOX_RETENTION */
  outboxRetentionMs: number;
  orderImports: {
    /** ORDER_IMPORT_RETENTION */
    retentionMs: number;
    /** ORDER_IMPORT_MAX_LINES */
    maxLines: number;
  };
  /** RETENTION_INTERVAL */
  retentionIntervalMs: number;
  tracing: {
    /** OTEL_EXPORTER_OTLP_ENDPOINT; null: nothing exported (shared/observability/tracing.ts). */
    otlpEndpoint: string | null;
    /** OTEL_SERVICE_NAME; null: named after the services (runtime/broker.ts). */
    serviceName: string | null;
  };
}

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

type Raw = Record<VariableName, string | number | boolean | string[]>;

function parseVariable(name: VariableName, text: string, problems: string[]): string | number | boolean | string[] {
  const spec: Variable = VARIABLES[name];
  switch (spec.type) {
    case "integer": {
      if (!/^-?\d+$/.test(text.trim())) problems.push(refused(name, text, "a whole number"));
      return Number.parseInt(text, 10);
    }
    case "boolean": {
      const v = text.trim().toLowerCase();
      if (!["true", "false", "1", "0", "yes", "no"].includes(v)) problems.push(refused(name, text, "true or false"));
      return ["true", "1", "yes"].includes(v);
    }
    case "list":
      return text
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
    default:
      return text;
  }
}

const validator = new Validator();

/** How every refused setting reads: the variable, the value it had, and what it takes. */
function refused(name: string, text: string, expected: string): string {
  // A secret is not printed, not even a wrong one: it may be a real key pasted in the wrong place.
  const shown = SECRET_VARIABLES.has(name) ? `(${text.length} characters, not shown)` : `"${text}"`;
  return `${name}=${shown} is not valid: expected ${expected}`;
}

const SECRET_VARIABLES = new Set(["ADMIN_API_KEY", "SECRETS_ENCRYPTION_KEYS"]);

/** What a variable takes, in words, for the rule it broke (fastest-validator's error type). */
function expectation(name: VariableName, errorType: string): string {
  const rule = (VARIABLES[name] as Variable).rule as { min?: number; max?: number; enum?: string[] } | undefined;
  if (name === "ADMIN_API_KEY") return "at least 24 characters, or nothing";
  if (name === "PORTAL_FRAME_ANCESTORS") return "comma-separated origins such as https://app.example.com, or 'self'";
  if (name === "TRUST_PROXY") return "comma-separated IP addresses or CIDR ranges (10.0.0.0/8)";
  if (errorType === "stringEnum" && rule?.enum) return `one of ${rule.enum.join(", ")}`;
  if (name === "NAMESPACE") return "1 to 64 of A-Z a-z 0-9 _ -";
  if (name === "JETSTREAM_REPLICAS") return "auto, or a number of replicas from 1 to 5";
  if (name === "OTEL_EXPORTER_OTLP_ENDPOINT")
    return "nothing, or an http:// or https:// URL such as http://collector:4318";
  if (errorType === "stringPattern" && (VARIABLES[name] as Variable).rule?.pattern === DURATION_PATTERN)
    return "a duration such as 500ms, 30s, 15m, 12h or 30d";
  if (errorType === "numberMin" || errorType === "numberMax") {
    return rule?.max === undefined
      ? `a whole number of at least ${rule?.min}`
      : `a whole number from ${rule?.min ?? 0} to ${rule.max}`;
  }
  return VARIABLES[name].description;
}

/** `defaults` replaces VARIABLES' defaults for one runner (start:cluster defaults to local NATS). */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  defaults: Partial<Record<VariableName, string>> = {},
): Config {
  const problems: string[] = [];
  const raw = {} as Raw;
  const texts = {} as Record<VariableName, string>;
  for (const name of Object.keys(VARIABLES) as VariableName[]) {
    const text = env[name] ?? defaults[name] ?? VARIABLES[name].default ?? "";
    texts[name] = text;
    raw[name] = parseVariable(name, text, problems);
  }

  const rules: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(VARIABLES) as [VariableName, Variable][]) {
    if (spec.rule) rules[name] = { type: spec.type === "integer" ? "number" : spec.type, ...spec.rule };
  }
  const result = validator.validate(raw, rules);
  if (result !== true) {
    const named = new Set<string>();
    for (const e of result as { field: string; type: string }[]) {
      const name = e.field.replace(/\[\d+\]$/, "") as VariableName;
      // One line per variable; one already refused as unparsable is not refused again.
      if (named.has(name) || problems.some((p) => p.startsWith(`${name}=`))) continue;
      named.add(name);
      problems.push(refused(name, texts[name], expectation(name, e.type)));
    }
  }

  const services = raw.SERVICES as string[];
  for (const s of services) {
    if (!(ALL_SERVICES as readonly string[]).includes(s))
      problems.push(`SERVICES names an unknown service "${s}" (known: ${ALL_SERVICES.join(", ")})`);
  }
  const transporter = String(raw.TRANSPORTER) || null;
  if (transporter && !/^nats:\/\//.test(transporter))
    problems.push(refused("TRANSPORTER", transporter, "nothing (embedded) or a nats:// URL"));
  const databaseUrl = String(raw.DATABASE_URL);
  if (!/^(postgres(ql)?:\/\/|pglite:\/\/)/.test(databaseUrl))
    problems.push(refused("DATABASE_URL", databaseUrl, "a postgres:// URL, or pglite://<folder> or pglite://memory"));
  if (transporter && databaseUrl.startsWith("pglite://")) {
    problems.push(
      refused(
        "DATABASE_URL",
        databaseUrl,
        "a postgres:// URL when TRANSPORTER is set (an embedded PGlite database cannot be shared between processes)",
      ),
    );
  }
  const schedule = (raw.WEBHOOK_RETRY_SCHEDULE as string[]).map(Number);
  if (schedule.some((n) => !Number.isFinite(n) || n < 0)) {
    problems.push(
      refused("WEBHOOK_RETRY_SCHEDULE", texts.WEBHOOK_RETRY_SCHEDULE, "a comma-separated list of seconds (10,60,300)"),
    );
  }

  const secrets = parseEncryptionKeys(raw.SECRETS_ENCRYPTION_KEYS as string[], "SECRETS_ENCRYPTION_KEYS");
  problems.push(...secrets.problems);

  if (problems.length > 0) throw new ConfigError(problems);

  return {
    env: String(raw.NODE_ENV),
    logLevel: raw.LOG_LEVEL as Config["logLevel"],
    nodeId: String(raw.NODE_ID),
    namespace: String(raw.NAMESPACE),
    services: services as ServiceName[],
    transporter,
    jetstreamReplicas: raw.JETSTREAM_REPLICAS === "auto" ? "auto" : Number(raw.JETSTREAM_REPLICAS),
    jetstreamApiTimeoutMs: raw.JETSTREAM_API_TIMEOUT_MS as number,
    databaseUrl,
    databasePoolMax: raw.DATABASE_POOL_MAX as number,
    migrateOnStart: raw.MIGRATE_ON_START as boolean,
    demoData: raw.DEMO_DATA as Config["demoData"],
    adminApiKey: String(raw.ADMIN_API_KEY) || null,
    host: String(raw.HOST),
    port: raw.PORT as number,
    publicBaseUrl: String(raw.PUBLIC_BASE_URL).replace(/\/$/, ""),
    requestTimeoutMs: raw.REQUEST_TIMEOUT_MS as number,
    rateLimitPerMinute: raw.RATE_LIMIT_PER_MINUTE as number,
    authFailuresPerMinute: raw.AUTH_FAILURES_PER_MINUTE as number,
    trustProxy: raw.TRUST_PROXY as string[],
    shutdownTimeoutMs: raw.SHUTDOWN_TIMEOUT_MS as number,
    healthPort: raw.HEALTH_PORT as number,
    readinessCheckTimeoutMs: raw.READINESS_CHECK_TIMEOUT_MS as number,
    metricsOnPublicPort: raw.METRICS_ON_PUBLIC_PORT as boolean,
    outboxRelayIntervalMs: raw.OUTBOX_RELAY_INTERVAL_MS as number,
    outboxStalledAfterMs: durationMs(String(raw.OUTBOX_STALLED_AFTER)),
    secretsEncryptionKeys: secrets.keys,
    webhooks: {
      allowInsecureTargets: raw.WEBHOOK_ALLOW_INSECURE_TARGETS as boolean,
      timeoutMs: raw.WEBHOOK_TIMEOUT_MS as number,
      retryScheduleSeconds: schedule,
      dispatchBatch: raw.WEBHOOK_DISPATCH_BATCH as number,
      endpointConcurrency: raw.WEBHOOK_ENDPOINT_CONCURRENCY as number,
      dispatchIntervalMs: raw.WEBHOOK_DISPATCH_INTERVAL_MS as number,
      secretOverlapMs: durationMs(String(raw.WEBHOOK_SECRET_OVERLAP)),
      retryAfterMaxMs: durationMs(String(raw.WEBHOOK_RETRY_AFTER_MAX)),
      disableAfterMs: durationMs(String(raw.WEBHOOK_DISABLE_AFTER)),
      retentionMs: durationMs(String(raw.WEBHOOK_RETENTION)),
      orderingHoldMs: durationMs(String(raw.WEBHOOK_ORDERING_HOLD)),
    },
    portal: {
      linkTtlMs: durationMs(String(raw.PORTAL_LINK_TTL)),
      sessionTtlMs: durationMs(String(raw.PORTAL_SESSION_TTL)),
      // auto: on where a developer runs it (the embedded mode, or NODE_ENV other than production).
      keySignIn:
        raw.PORTAL_KEY_SIGN_IN === "auto"
          ? String(raw.NODE_ENV) !== "production" || !transporter
          : raw.PORTAL_KEY_SIGN_IN === "on",
      frameAncestors: raw.PORTAL_FRAME_ANCESTORS as string[],
    },
    // The events feed reads the outbox: it keeps events at least as long as deliveries are kept.
    outboxRetentionMs: Math.max(durationMs(String(raw.OUTBOX_RETENTION)), durationMs(String(raw.WEBHOOK_RETENTION))),
    orderImports: {
      retentionMs: durationMs(String(raw.ORDER_IMPORT_RETENTION)),
      maxLines: Number(raw.ORDER_IMPORT_MAX_LINES),
    },
    retentionIntervalMs: durationMs(String(raw.RETENTION_INTERVAL)),
    tracing: {
      otlpEndpoint: String(raw.OTEL_EXPORTER_OTLP_ENDPOINT) || null,
      serviceName: String(raw.OTEL_SERVICE_NAME) || null,
    },
  };
}

let current: Config | null = null;

/** The process-wide configuration, loaded (and validated) once. */
export function config(): Config {
  current ??= loadConfig();
  return current;
}

/** For tests and runners that build a config from an explicit environment. */
export function setConfig(next: Config): void {
  current = next;
}

/** This process's environment with some variables replaced: for the processes a runner spawns. */
export function environmentWith(overrides: Partial<Record<VariableName, string>>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
