import { ServiceBroker } from "moleculer";
import { NotFoundError } from "../../shared/errors";
import {
  actionMetricsMiddleware,
  observeHttpRequest,
  observeWebhookAttempt,
  registry,
  renderMetrics,
} from "../../shared/observability/metrics";

/** A counter's value, or a histogram's number of observations, for these labels. */
async function sampleCount(metric: string, labels: Record<string, string>): Promise<number> {
  const found = await registry.getSingleMetric(metric)?.get();
  const isCount = (v: object) => {
    const name = (v as { metricName?: string }).metricName;
    return name === undefined || name.endsWith("_count");
  };
  const match = found?.values.find(
    (v) => isCount(v) && Object.entries(labels).every(([k, want]) => v.labels[k] === want),
  );
  return match?.value ?? 0;
}

describe("metrics", () => {
  const broker = new ServiceBroker({ nodeID: "metrics-test", logger: false, middlewares: [actionMetricsMiddleware] });
  broker.createService({
    name: "sample",
    actions: {
      ok: () => "fine",
      missing: () => Promise.reject(new NotFoundError("thing", 1)),
      broken: () => Promise.reject(new Error("boom")),
    },
  });
  beforeAll(() => broker.start());
  afterAll(() => broker.stop());

  it("when local actions succeed, fail with a domain error or break, then each outcome is counted under the action's name", async () => {
    await broker.call("sample.ok");
    await broker.call("sample.ok");
    await expect(broker.call("sample.missing")).rejects.toThrow();
    await expect(broker.call("sample.broken")).rejects.toThrow("boom");
    expect(await sampleCount("action_duration_seconds", { action: "sample.ok", outcome: "ok" })).toBe(2);
    expect(await sampleCount("action_duration_seconds", { action: "sample.missing", outcome: "rejected" })).toBe(1);
    expect(await sampleCount("action_duration_seconds", { action: "sample.broken", outcome: "error" })).toBe(1);
  });

  it("when the webhooks dispatcher records attempts, then they count by outcome", async () => {
    observeWebhookAttempt("delivered", 0.2);
    observeWebhookAttempt("timeout", 10);
    observeWebhookAttempt("delivered", 0.1);
    expect(await sampleCount("webhook_delivery_attempts_total", { outcome: "delivered" })).toBe(2);
    expect(await sampleCount("webhook_delivery_attempts_total", { outcome: "timeout" })).toBe(1);
    expect(await sampleCount("webhook_delivery_attempt_duration_seconds", { outcome: "timeout" })).toBe(1);
  });

  it("when metrics are scraped, then the text names HTTP requests by route and status, and the pool", async () => {
    observeHttpRequest({ method: "GET", route: "/api/v1/orders/:id", status: 404, seconds: 0.01 });
    const { contentType, body } = await renderMetrics(broker);
    expect(contentType).toMatch(/^text\/plain/);
    expect(body).toContain('http_requests_total{method="GET",route="/api/v1/orders/:id",status="404"} 1');
    expect(body).toMatch(/^db_pool_connections\{state="used"\} \d+$/m);
    expect(body).toMatch(/^db_pool_max_connections \d+$/m);
  });
});
