import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ServiceBroker } from "moleculer";
import { startProbeServer, type ProbeServer } from "../../shared/observability/probe-server";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { READINESS_CHECK_TIMEOUT_MS } from "../helpers/deadlines";

const ADMIN_KEY = "health-test-admin-key-0123456789";
/** As the test brokers' gateways have it (test/helpers/broker.ts). */
const readiness = { checkTimeoutMs: READINESS_CHECK_TIMEOUT_MS };

function gatewayUrl(broker: ServiceBroker): string {
  const server = (broker.getLocalService("gateway") as unknown as { server: Server }).server;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("health, readiness and metrics on the gateway and on HEALTH_PORT", () => {
  let t: TestBroker;
  let base: string;
  let probes: ProbeServer;

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["gateway", "clients", "crm", "references"],
      env: { ADMIN_API_KEY: ADMIN_KEY },
    });
    base = gatewayUrl(t.broker);
    probes = await startProbeServer(t.broker, 0, "127.0.0.1", readiness);
  });
  afterAll(async () => {
    await probes?.close();
    await t?.stop();
  });

  it("when /healthz is asked without credentials, then it answers 200 ok", async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("when every service has its database and migrations, then /readyz is 200 and names each check", async () => {
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({
      status: "ok",
      failing: [],
      checks: {
        broker: "ok",
        "clients.database": "ok",
        "crm.migrations": "ok",
        "references.database": "ok",
        "references.migrations": "ok",
      },
    });
  });

  it("when a request is made, then /metrics on the probe port counts it by route and status and times the action behind it", async () => {
    const created = await fetch(`${base}/api/v1/customers`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        "content-type": "application/json",
        "x-request-id": "metrics-test-1",
      },
      body: JSON.stringify({ name: "Metrics Ltd" }),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("x-request-id")).toBe("metrics-test-1");
    await fetch(`${base}/api/v1/customers/999999`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    await fetch(`${base}/no/such/path`);

    const res = await fetch(`http://127.0.0.1:${probes.port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('http_requests_total{method="POST",route="/api/v1/customers",status="201"} 1');
    expect(text).toContain('http_requests_total{method="GET",route="/api/v1/customers/:id",status="404"} 1');
    expect(text).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toMatch(/^action_duration_seconds_count\{action="crm.createCustomer",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^action_duration_seconds_count\{action="crm.getCustomer",outcome="rejected"\} 1$/m);
    // references keeps an outbox, crm does not.
    expect(text).toMatch(/^outbox_lag_seconds\{schema="references"\} [\d.]+$/m);
    expect(text).not.toContain('outbox_lag_seconds{schema="crm"}');
    expect(text).toMatch(/^db_pool_max_connections [1-9]\d*$/m);
  });

  it("when /metrics is asked on the gateway's public port by default, then it is 404 and the served document does not list it", async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const document = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(["/healthz", "/readyz"]));
    expect(Object.keys(document.paths)).not.toContain("/metrics");
  });

  it("when the probe server on HEALTH_PORT is asked, then it answers the same probes and nothing else", async () => {
    const url = `http://127.0.0.1:${probes.port}`;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: "ok", checks: { "crm.database": "ok" } });
    expect(await (await fetch(`${url}/metrics`)).text()).toContain("http_requests_total");
    expect((await fetch(`${url}/api/v1/customers`)).status).toBe(404);
  });
});

describe("METRICS_ON_PUBLIC_PORT=true", () => {
  it("when /metrics is asked on the gateway's public port, then it answers the metrics and the served document lists it", async () => {
    const t = await startTestBroker({ services: ["gateway", "clients"], env: { METRICS_ON_PUBLIC_PORT: "true" } });
    try {
      const base = gatewayUrl(t.broker);
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^db_pool_max_connections [1-9]\d*$/m);
      const document = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as {
        paths: Record<string, unknown>;
      };
      expect(Object.keys(document.paths)).toContain("/metrics");
    } finally {
      await t.stop();
    }
  });
});

describe("readiness before migrations", () => {
  it("when a service starts without its migrations applied, then /readyz is 503 naming them", async () => {
    const t = await startTestBroker({ services: ["crm"], env: { MIGRATE_ON_START: "false" } });
    const probes = await startProbeServer(t.broker, 0, "127.0.0.1", readiness);
    try {
      const res = await fetch(`http://127.0.0.1:${probes.port}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({
        status: "unavailable",
        failing: ["crm.migrations"],
        checks: { "crm.database": "ok", "crm.migrations": "pending" },
      });
    } finally {
      await probes.close();
      await t.stop();
    }
  });
});
