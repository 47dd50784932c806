/**
 * Prometheus metrics of this process: one prom-client registry (moleculer's own metrics stay
 * off), served at `/metrics` by the probe server (HEALTH_PORT), and by the gateway on its public
 * port only with METRICS_ON_PUBLIC_PORT.
 *
 * - `http_requests_total`, `http_request_duration_seconds` — by method, route (the alias path,
 *   never the raw URL, so the label set stays small) and status; recorded by the gateway.
 * - `action_duration_seconds` — local action calls by action and outcome (`actionMetricsMiddleware`).
 * - `outbox_lag_seconds` — age of the oldest unsent outbox row per schema, sampled at scrape.
 * - `outbox_publishing_failing_seconds` — how long a schema's relay has failed to publish in a row
 *   (0 while it works), sampled at scrape; `outbox_publish_failures_total` — publishes that failed.
 * - `webhook_delivery_attempts_total`, `webhook_delivery_attempt_duration_seconds` — by outcome;
 *   the webhooks dispatcher calls `observeWebhookAttempt` once per attempt.
 * - `retention_rows_pruned_total` — rows removed by the retention jobs, by table (`<schema>.<table>`).
 * - `webhook_subscriptions` (by state: healthy, failing, disabled), `webhook_deliveries_pending`,
 *   `webhook_oldest_pending_delivery_age_seconds`, and per-subscription figures only for the
 *   few worst (`webhook_subscription_failing_seconds`, label `rank` 1..5, never the subscription
 *   id, so the label set stays bounded however many subscriptions there are); sampled at scrape
 *   from the database, so every webhooks replica reports the same values.
 * - `db_pool_connections` (used, free, pending), `db_pool_max_connections` — sampled at scrape.
 * - the process defaults of prom-client (CPU, memory, event loop lag, GC).
 */
import type { Context, Middleware, ServiceBroker } from "moleculer";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { poolUsage } from "../database/db";
import { databaseServicesOf, hasEventFlow } from "./readiness";

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const WEBHOOK_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const httpRequests = new Counter({
  name: "http_requests_total",
  help: "HTTP requests answered by the gateway, by method, route and status.",
  labelNames: ["method", "route", "status"] as const,
  registers: [registry],
});

const httpRequestDuration = new Histogram({
  name: "http_request_duration_seconds",
  help: "Time from receiving an HTTP request to the end of its response, by method, route and status.",
  labelNames: ["method", "route", "status"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

const actionDuration = new Histogram({
  name: "action_duration_seconds",
  help: "Duration of local action calls, by action and outcome (ok, rejected = 4xx domain error, error).",
  labelNames: ["action", "outcome"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

const outboxLag = new Gauge({
  name: "outbox_lag_seconds",
  help: "Age of the oldest outbox event not yet published (0 when none), by schema; sampled at scrape.",
  labelNames: ["schema"] as const,
  registers: [registry],
});

const publishingFailing = new Gauge({
  name: "outbox_publishing_failing_seconds",
  help: "How long this process's outbox relay has failed to publish, every round in a row (0 while it works), by schema; sampled at scrape.",
  labelNames: ["schema"] as const,
  registers: [registry],
});

const publishFailures = new Counter({
  name: "outbox_publish_failures_total",
  help: "Outbox events whose publish failed (they are published again later), by schema.",
  labelNames: ["schema"] as const,
  registers: [registry],
});

const eventsUnheard = new Counter({
  name: "outbox_events_unheard_total",
  help: "Outbox events settled without being published because no webhook subscription listens to them, by schema.",
  labelNames: ["schema"] as const,
  registers: [registry],
});

/** Publishes of one relay round that failed. */
export function countPublishFailures(schema: string, failures: number): void {
  if (failures > 0) publishFailures.inc({ schema }, failures);
}

/** Events of one relay round that nobody listens to (shared/messaging/listened-events.ts). */
export function countUnheardEvents(schema: string, count: number): void {
  if (count > 0) eventsUnheard.inc({ schema }, count);
}

/** How one webhook delivery attempt ended. */
export type WebhookAttemptOutcome =
  | "delivered" // a 2xx answer
  | "http_error" // any other answer
  | "timeout" // no answer within WEBHOOK_TIMEOUT_MS
  | "network_error" // refused, reset, DNS or TLS failure
  | "blocked"; // the target resolved to an address that is not allowed

const webhookAttempts = new Counter({
  name: "webhook_delivery_attempts_total",
  help: "Webhook delivery attempts, by outcome (delivered, http_error, timeout, network_error, blocked).",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

const webhookAttemptDuration = new Histogram({
  name: "webhook_delivery_attempt_duration_seconds",
  help: "Duration of webhook delivery attempts, by outcome.",
  labelNames: ["outcome"] as const,
  buckets: WEBHOOK_BUCKETS,
  registers: [registry],
});

const rowsPruned = new Counter({
  name: "retention_rows_pruned_total",
  help: "Rows removed by the retention jobs, by table (<schema>.<table>).",
  labelNames: ["table"] as const,
  registers: [registry],
});

/** Rows a retention job removed from one table. */
export function countPrunedRows(table: string, rows: number): void {
  if (rows > 0) rowsPruned.inc({ table }, rows);
}

/** What the webhooks service reports at each scrape (webhooks.subscription-health.ts). */
export interface WebhookHealthFigures {
  subscriptions: { healthy: number; failing: number; disabled: number };
  pendingDeliveries: number;
  oldestPendingAgeSeconds: number;
  /** Seconds each of the longest-failing subscriptions has failed, longest first (at most WORST_RANKS). */
  worstFailingSeconds: number[];
}

/** How many of the longest-failing subscriptions get a `rank` series. */
export const WORST_RANKS = 5;

const webhookSubscriptions = new Gauge({
  name: "webhook_subscriptions",
  help: "Webhook subscriptions by state: healthy, failing (its latest attempts all failed), disabled; sampled at scrape.",
  labelNames: ["state"] as const,
  registers: [registry],
});
const webhookPending = new Gauge({
  name: "webhook_deliveries_pending",
  help: "Webhook deliveries waiting to be sent (the backlog); sampled at scrape.",
  registers: [registry],
});
const webhookOldestPending = new Gauge({
  name: "webhook_oldest_pending_delivery_age_seconds",
  help: "Age of the oldest pending webhook delivery (0 when none); sampled at scrape.",
  registers: [registry],
});
const webhookWorstFailing = new Gauge({
  name: "webhook_subscription_failing_seconds",
  help: `How long each of the ${WORST_RANKS} longest-failing subscriptions has failed every attempt, by rank (1 = longest); sampled at scrape.`,
  labelNames: ["rank"] as const,
  registers: [registry],
});

function reportWebhookHealth(f: WebhookHealthFigures): void {
  for (const [state, count] of Object.entries(f.subscriptions)) webhookSubscriptions.set({ state }, count);
  webhookPending.set(f.pendingDeliveries);
  webhookOldestPending.set(f.oldestPendingAgeSeconds);
  webhookWorstFailing.reset();
  f.worstFailingSeconds
    .slice(0, WORST_RANKS)
    .forEach((seconds, i) => webhookWorstFailing.set({ rank: String(i + 1) }, seconds));
}

let webhookHealthSource: (() => Promise<WebhookHealthFigures>) | null = null;

/** The webhooks service of this process hands in how to read its figures; returns the undo. */
export function reportWebhookHealthFrom(source: () => Promise<WebhookHealthFigures>): () => void {
  webhookHealthSource = source;
  return () => {
    if (webhookHealthSource === source) webhookHealthSource = null;
  };
}

async function sampleWebhookHealth(): Promise<void> {
  if (!webhookHealthSource) return;
  try {
    reportWebhookHealth(await webhookHealthSource());
  } catch {
    // An unreachable database shows in /readyz; a scrape still answers with what it has.
  }
}

new Gauge({
  name: "db_pool_connections",
  help: "Database connections of this process's pool(s), by state (used, free, pending = callers waiting for one).",
  labelNames: ["state"] as const,
  registers: [registry],
  collect() {
    const usage = poolUsage();
    this.set({ state: "used" }, usage.used);
    this.set({ state: "free" }, usage.free);
    this.set({ state: "pending" }, usage.pending);
  },
});

new Gauge({
  name: "db_pool_max_connections",
  help: "Most connections this process's pool(s) may open.",
  registers: [registry],
  collect() {
    this.set(poolUsage().max);
  },
});

export interface HttpObservation {
  method: string;
  route: string;
  status: number;
  seconds: number;
}

export function observeHttpRequest(o: HttpObservation): void {
  const labels = { method: o.method, route: o.route, status: String(o.status) };
  httpRequests.inc(labels);
  httpRequestDuration.observe(labels, o.seconds);
}

/** One webhook delivery attempt; call it once per attempt, whatever its outcome. */
export function observeWebhookAttempt(outcome: WebhookAttemptOutcome, seconds: number): void {
  webhookAttempts.inc({ outcome });
  webhookAttemptDuration.observe({ outcome }, seconds);
}

function outcomeOf(err: unknown): "rejected" | "error" {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" && code >= 400 && code < 500 ? "rejected" : "error";
}

type Handler = (ctx: Context) => Promise<unknown>;

/** Times every local action call (wherever it was called from) by action name and outcome. */
export const actionMetricsMiddleware: Middleware = {
  name: "ActionMetrics",
  localAction: ((next: Handler, action: { name?: string }) => {
    const name = action.name ?? "unknown";
    return function timed(ctx: Context) {
      const stop = actionDuration.startTimer({ action: name });
      return next(ctx).then(
        (result) => {
          stop({ outcome: "ok" });
          return result;
        },
        (err: unknown) => {
          stop({ outcome: outcomeOf(err) });
          throw err;
        },
      );
    };
  }) as Middleware["localAction"],
};

async function sampleOutboxLag(broker: ServiceBroker): Promise<void> {
  await Promise.all(
    databaseServicesOf(broker).map(async ({ name, service }) => {
      if (hasEventFlow(service)) publishingFailing.set({ schema: name }, service.publishingFailingSeconds());
      try {
        const lag = await service.outboxLag();
        if (lag !== null) outboxLag.set({ schema: name }, lag);
      } catch {
        // An unreachable database shows in /readyz; a scrape still answers with what it has.
      }
    }),
  );
}

/** The text exposition of every metric, after sampling what is sampled at scrape. */
export async function renderMetrics(broker: ServiceBroker): Promise<{ contentType: string; body: string }> {
  await Promise.all([sampleOutboxLag(broker), sampleWebhookHealth()]);
  return { contentType: registry.contentType, body: await registry.metrics() };
}
