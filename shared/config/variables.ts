/**
 * Every environment variable the service understands: its name, type, default and description.
 * shared/config/config.ts validates the environment against this table; the configuration
 * reference (docs/operations.md) and .env.example are generated from it, and the deploy
 * manifests test reads it to prove every variable is set or defaulted.
 */
import ipaddr from "ipaddr.js";
export const ALL_SERVICES = ["gateway", "clients", "crm", "catalogue", "references", "orders", "webhooks"] as const;
export type ServiceName = (typeof ALL_SERVICES)[number];

export type VariableType = "string" | "integer" | "boolean" | "list";

/** A duration as the retention and health variables take it: a whole number and a unit (ms, s, m, h, d). */
export const DURATION_PATTERN = /^\d+(ms|s|m|h|d)$/;
const DURATION_UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An origin that may embed the portal page (PORTAL_FRAME_ANCESTORS), as CSP writes one. */
export const FRAME_ANCESTOR_PATTERN = /^(https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?|'self')$/;

/** Milliseconds of a duration that matched DURATION_PATTERN. */
export function durationMs(text: string): number {
  const [, amount, unit] = /^(\d+)(ms|s|m|h|d)$/.exec(text) ?? [];
  return Number(amount) * DURATION_UNIT_MS[unit as keyof typeof DURATION_UNIT_MS];
}
export interface Variable {
  type: VariableType;
  default?: string;
  description: string;
  /** Extra fastest-validator rule for the parsed value. */
  rule?: Record<string, unknown>;
}

export const VARIABLES = {
  NODE_ENV: { type: "string", default: "production", description: "production, development or test." },
  LOG_LEVEL: {
    type: "string",
    default: "info",
    description: "pino level: fatal, error, warn, info, debug, trace.",
    rule: { enum: ["fatal", "error", "warn", "info", "debug", "trace"] },
  },
  NODE_ID: { type: "string", default: "", description: "Moleculer node id; defaults to <hostname>-<pid>." },
  NAMESPACE: {
    type: "string",
    default: "order-intake",
    description:
      "Moleculer namespace, also the prefix of the JetStream streams: the processes of one deployment share it; another deployment on the same NATS needs its own.",
    rule: { pattern: /^[A-Za-z0-9_-]{1,64}$/ },
  },
  SERVICES: {
    type: "list",
    default: ALL_SERVICES.join(","),
    description: "Comma-separated services this process runs.",
  },
  TRANSPORTER: {
    type: "string",
    default: "",
    description:
      "Empty for one process (embedded); nats://host:4222 for the distributed mode, or the servers of a NATS cluster separated by commas (nats://nats-0:4222,nats://nats-1:4222,nats://nats-2:4222): a process connects to any that answers.",
  },
  JETSTREAM_REPLICAS: {
    type: "string",
    default: "auto",
    description:
      "Replicas of each JetStream stream (and its consumers): auto is 3 on a NATS cluster (fewer when the cluster has fewer JetStream servers) and 1 on a single server; 1 to 5 asks for exactly that many. A stream that exists with another count is updated at start.",
    rule: { pattern: /^(auto|[1-5])$/ },
  },
  JETSTREAM_API_TIMEOUT_MS: {
    type: "integer",
    default: "5000",
    description:
      "How long a JetStream request (a stream or a consumer made or read, at start and at each subscription) waits for NATS's answer; a request not answered in time, or answered temporarily unavailable (a NATS cluster electing leaders after a node restarted), is sent again for up to 60 s before the start fails. A replicated stream answers once its nodes agree: raise it for a NATS cluster on busy machines.",
    rule: { min: 500 },
  },
  DATABASE_URL: {
    type: "string",
    default: "pglite://./.data/pglite",
    description:
      "postgres://user:pass@host:5432/db, pglite://<folder> (embedded, kept) or pglite://memory (throwaway).",
  },
  DATABASE_POOL_MAX: {
    type: "integer",
    default: "10",
    description: "PostgreSQL connections per service per process.",
    rule: { min: 1, max: 200 },
  },
  MIGRATE_ON_START: {
    type: "boolean",
    default: "true",
    description: "Each service applies its own migrations when it starts.",
  },
  DEMO_DATA: {
    type: "string",
    default: "auto",
    description: "auto (seed an empty embedded database), always, or never.",
    rule: { enum: ["auto", "always", "never"] },
  },
  ADMIN_API_KEY: {
    type: "string",
    default: "",
    description: "When set, an admin client with this key is created or updated at start.",
    rule: { custom: (v: string) => (v === "" || v.length >= 24 ? true : [{ type: "adminKeyLength" }]) },
  },
  HOST: { type: "string", default: "0.0.0.0", description: "Address the gateway listens on." },
  PORT: {
    type: "integer",
    default: "3000",
    description: "Port of the HTTP API (gateway).",
    rule: { min: 0, max: 65535 },
  },
  PUBLIC_BASE_URL: {
    type: "string",
    default: "",
    description: "Base URL used in Location and Link headers; empty for relative links.",
  },
  REQUEST_TIMEOUT_MS: {
    type: "integer",
    default: "10000",
    description: "Timeout of one action call.",
    rule: { min: 100 },
  },
  RATE_LIMIT_PER_MINUTE: {
    type: "integer",
    default: "6000",
    description:
      "Requests per authenticated client per minute, across all gateway replicas (they share their counts); 0 disables.",
    rule: { min: 0 },
  },
  AUTH_FAILURES_PER_MINUTE: {
    type: "integer",
    default: "20",
    description:
      "Failed authentications a minute allowed per source address, and per presented key prefix, before the gateway answers 429 without looking keys up (a key that exists is still looked up and served); 0 disables.",
    rule: { min: 0 },
  },
  TRUST_PROXY: {
    type: "list",
    default: "",
    description:
      "Addresses or CIDR ranges of the reverse proxies in front of the gateway; only a request from one of them has its X-Forwarded-For believed. Empty: the socket's address is the client's.",
    rule: {
      type: "array",
      items: {
        type: "string",
        custom: (v: string) => (ipaddr.isValid(v) || ipaddr.isValidCIDR(v) ? true : [{ type: "trustProxyEntry" }]),
      },
    },
  },
  SHUTDOWN_TIMEOUT_MS: {
    type: "integer",
    default: "10000",
    description: "How long SIGTERM waits for in-flight work.",
    rule: { min: 0 },
  },
  HEALTH_PORT: {
    type: "integer",
    default: "0",
    description:
      "Port of /healthz, /readyz and /metrics of this process, the gateway's included (the port Prometheus scrapes); 0 turns it off.",
    rule: { min: 0, max: 65535 },
  },
  READINESS_CHECK_TIMEOUT_MS: {
    type: "integer",
    default: "1500",
    description:
      "How long /readyz waits for each of a service's checks (its database, its events) before giving up on it (the database reads timeout); keep it under the probe's own time-out (3 s in the manifests). Raise both on a busy machine: a slow check is not a failed database.",
    rule: { min: 100 },
  },
  METRICS_ON_PUBLIC_PORT: {
    type: "boolean",
    default: "false",
    description:
      "Also serve /metrics on the gateway's PORT, beside /healthz and /readyz. Off by default: the public port does not show the process's internals; /metrics is on HEALTH_PORT.",
  },
  OUTBOX_RELAY_INTERVAL_MS: {
    type: "integer",
    default: "2000",
    description:
      "How often each outbox relay looks for unsent events nobody woke it for: a commit wakes its own process's relay at once, so this is the longest an event waits when the process that wrote it died before publishing it (a replica's relay takes it). The order import worker looks for queued imports as often (an upload wakes its own process's worker at once).",
    rule: { min: 10 },
  },
  OUTBOX_STALLED_AFTER: {
    type: "string",
    default: "30s",
    description:
      "/readyz of a process with an outbox (orders, references, webhooks) fails once its publishing has failed this long, or its oldest unpublished event is this old; a duration such as 30s, 2m.",
    rule: { pattern: DURATION_PATTERN },
  },
  SECRETS_ENCRYPTION_KEYS: {
    type: "list",
    default: "",
    description:
      "Keys that encrypt stored webhook secrets and keys: comma-separated <keyId>:<base64 of 32 bytes>, the first encrypts, all decrypt. Required with a postgres:// DATABASE_URL; embedded, a key is kept in the data folder.",
  },
  WEBHOOK_ALLOW_INSECURE_TARGETS: {
    type: "boolean",
    default: "false",
    description: "Development only: allow http:// URLs and loopback/private addresses as webhook targets.",
  },
  WEBHOOK_TIMEOUT_MS: {
    type: "integer",
    default: "10000",
    description: "Time-out of one webhook attempt.",
    rule: { min: 100 },
  },
  WEBHOOK_RETRY_SCHEDULE: {
    type: "list",
    default: "5,30,120,600,1800,3600,7200,14400,28800,28800",
    description:
      "Seconds to wait before each retry (jitter of up to 20% is added); the number of entries is the number of retries.",
  },
  WEBHOOK_DISPATCH_BATCH: {
    type: "integer",
    default: "50",
    description: "Deliveries one dispatcher claims at a time.",
    rule: { min: 1, max: 1000 },
  },
  WEBHOOK_ENDPOINT_CONCURRENCY: {
    type: "integer",
    default: "10",
    description:
      "Attempts one dispatcher has in flight to one endpoint (URL origin) at most; 1 while that endpoint's last attempt timed out.",
    rule: { min: 1, max: 1000 },
  },
  WEBHOOK_DISPATCH_INTERVAL_MS: {
    type: "integer",
    default: "250",
    description: "How often an idle dispatcher looks for due deliveries.",
    rule: { min: 10 },
  },
  WEBHOOK_SECRET_OVERLAP: {
    type: "string",
    default: "24h",
    description:
      "After a rotation, the replaced secret (and key, and Ed25519 key) still signs beside the new one for this long; a duration such as 1h, 24h, 0s.",
    rule: { pattern: DURATION_PATTERN },
  },
  WEBHOOK_RETRY_AFTER_MAX: {
    type: "string",
    default: "1h",
    description:
      "Longest wait a receiver's Retry-After (with 429 or 503) may impose on its endpoint; a duration such as 90s, 30m, 1h.",
    rule: { pattern: DURATION_PATTERN },
  },
  WEBHOOK_DISABLE_AFTER: {
    type: "string",
    default: "5d",
    description:
      "A subscription whose every attempt failed for this long is disabled (its owner is told by webhook_endpoint_disabled); a duration such as 12h, 5d.",
    rule: { pattern: DURATION_PATTERN },
  },
  WEBHOOK_ORDERING_HOLD: {
    type: "string",
    default: "1s",
    description:
      "A delivery to a subscription with `ordering: per_entity` waits this long after its event happened before its first attempt, so that an earlier event of the same entity that reaches the webhooks service a little later still goes first; a duration such as 500ms, 1s, 0s.",
    rule: { pattern: DURATION_PATTERN },
  },
  WEBHOOK_RETENTION: {
    type: "string",
    default: "30d",
    description:
      "Webhook events, deliveries and attempts are pruned once settled (succeeded, failed, refused, cancelled) for this long; a duration such as 30d.",
    rule: { pattern: DURATION_PATTERN },
  },
  PORTAL_LINK_TTL: {
    type: "string",
    default: "15m",
    description:
      "How long a sign-in link to the subscriber portal (POST /api/v1/portal_sessions) can be used, once; a duration such as 15m.",
    rule: { pattern: DURATION_PATTERN },
  },
  PORTAL_SESSION_TTL: {
    type: "string",
    default: "1h",
    description: "How long a portal session lasts once its link was used; a duration such as 1h.",
    rule: { pattern: DURATION_PATTERN },
  },
  PORTAL_KEY_SIGN_IN: {
    type: "string",
    default: "auto",
    description:
      "Whether the portal page offers to sign in by typing an API key (sign-in links always work): on, off, or auto (on in the embedded mode or when NODE_ENV is not production; off in a distributed production deployment).",
    rule: { enum: ["auto", "on", "off"] },
  },
  PORTAL_FRAME_ANCESTORS: {
    type: "list",
    default: "",
    description:
      "Origins allowed to embed the portal page in a frame (its Content-Security-Policy frame-ancestors), comma-separated such as https://app.example.com; empty: none.",
    rule: { type: "array", items: { type: "string", pattern: FRAME_ANCESTOR_PATTERN } },
  },
  ORDER_IMPORT_RETENTION: {
    type: "string",
    default: "7d",
    description:
      "An order import (POST /order_imports), with its results, is pruned once it ended this long ago; a duration such as 7d.",
    rule: { pattern: DURATION_PATTERN },
  },
  ORDER_IMPORT_MAX_LINES: {
    type: "integer",
    default: "100000",
    description: "Most orders (lines) one import may hold; more is answered 413 naming the limit.",
    rule: { min: 1, max: 1000000 },
  },
  OUTBOX_RETENTION: {
    type: "string",
    default: "30d",
    description:
      "Outbox rows are pruned once published this long ago, and never before WEBHOOK_RETENTION: the events feed (GET /api/v1/events) reads them (each service prunes its own outbox); a duration such as 30d.",
    rule: { pattern: DURATION_PATTERN },
  },
  RETENTION_INTERVAL: {
    type: "string",
    default: "1h",
    description:
      "How often pruning runs: once per interval across all replicas of a service, in batches of 1,000 rows; a duration such as 1h.",
    rule: { pattern: DURATION_PATTERN },
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    type: "string",
    default: "",
    description:
      "OpenTelemetry collector (OTLP over HTTP) base URL such as http://collector:4318; spans go to <url>/v1/traces. Empty: no spans are recorded or exported (an incoming traceparent is still passed on to webhooks).",
    rule: { pattern: /^(https?:\/\/\S+)?$/ },
  },
  OTEL_SERVICE_NAME: {
    type: "string",
    default: "",
    description:
      "service.name of this process's spans; empty: the service it runs (SERVICES=orders: orders), or order-intake when it runs several.",
  },
} as const satisfies Record<string, Variable>;

export type VariableName = keyof typeof VARIABLES;
