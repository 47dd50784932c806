/**
 * Traces end to end (docs/operations.md, "Traces"): one trace from the gateway's
 * POST /api/v1/orders/{id}/validate to the webhook request a subscriber receives. Two brokers in
 * this process on one NATS: the gateway on one node, orders and webhooks on the other, so the
 * trace crosses a remote action call (ctx.meta), the outbox row, the JetStream message and the
 * webhook event row. Spans go to the SDK's in-memory exporter; then, with no exporter, an
 * incoming traceparent is still passed on unchanged to the subscriber.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { channelOf } from "../../shared/messaging/events";
import { recordSpansInto } from "../../shared/observability/tracing";
import { createApiWorld, partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { api, type ApiClient } from "../helpers/http";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";
import { TEST_NAMESPACE } from "../helpers/processes";
import { startReceiver, type ReceivedWebhook, type WebhookReceiver } from "../helpers/webhook-receiver";

const NATS_URL = process.env.TEST_NATS_URL;
const describeWithNats = requires(["nats"]).describe;

const NAMESPACE = `${TEST_NAMESPACE}-traces`;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID = "00f067aa0ba902b7";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

function baseUrlOf(t: TestBroker): string {
  const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The span's name and its ancestors', up to the root of its trace. */
function ancestry(span: ReadableSpan, spans: ReadableSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const names: string[] = [];
  for (let s: ReadableSpan | undefined = span; s; s = byId.get(s.parentSpanContext?.spanId ?? "")) names.push(s.name);
  return names;
}

describeWithNats("a trace from POST /orders/{id}/validate to the webhook delivery", () => {
  const exporter = new InMemorySpanExporter();
  let stopRecording: () => Promise<void>;
  let gatewayNode: TestBroker;
  let ordersNode: TestBroker;
  let receiver: WebhookReceiver;
  let world: ApiWorld;
  let backoffice: ApiClient;

  const orderCreated = async (): Promise<number> => {
    const r = await backoffice
      .as(world.partnerKey)
      .post<{ id: number }>("/api/v1/orders", partnerOrderBody(world, { externalReference: `PO-TRACE-${Date.now()}` }));
    expect(r.status).toBe(201);
    return r.body.id;
  };
  const deliveryOf = async (orderId: number): Promise<ReceivedWebhook> => {
    const of = (r: ReceivedWebhook) => (JSON.parse(r.body) as { id: number }).id === orderId;
    await receiver.waitFor((received) => received.some(of), EVENTUALLY_MS);
    return receiver.received.find(of)!;
  };
  const spansUntil = async (traceId: string, done: (spans: ReadableSpan[]) => boolean): Promise<ReadableSpan[]> => {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      if (done(spans) || Date.now() > deadline) return spans;
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  beforeAll(async () => {
    stopRecording = recordSpansInto(exporter);
    const env = {
      TRANSPORTER: NATS_URL!,
      NAMESPACE,
      OUTBOX_RELAY_INTERVAL_MS: "50",
      WEBHOOK_DISPATCH_INTERVAL_MS: "50",
      DATABASE_POOL_MAX: "3",
    };
    gatewayNode = await startTestBroker({
      services: ["gateway", "clients"],
      env: { ...env, NODE_ID: "traces-gateway" },
    });
    ordersNode = await startTestBroker({
      services: ["clients", "crm", "catalogue", "references", "orders", "webhooks"],
      env: { ...env, NODE_ID: "traces-orders" },
      database: gatewayNode.database,
    });
    await gatewayNode.broker.waitForServices(["orders", "webhooks", "crm", "catalogue", "references"]);
    receiver = await startReceiver();
    const { apiKey } = await gatewayNode.call<{ apiKey: string }>("clients.create", {
      name: "traces admin",
      kind: "admin",
    });
    world = await createApiWorld(api(baseUrlOf(gatewayNode)).as(apiKey));
    backoffice = api(baseUrlOf(gatewayNode)).as(world.backofficeKey);
    const subscribed = await backoffice.put("/api/v1/webhooks", {
      event: "sales_order_validated",
      url: `${receiver.url}/validated`,
    });
    expect(subscribed.status).toBe(201);
  });
  afterAll(async () => {
    await stopRecording?.();
    await ordersNode?.stop();
    await gatewayNode?.stop();
    await receiver?.close();
    await deleteStreams(NATS_URL!, NAMESPACE);
  });

  it("when the caller sends a traceparent, then the spans from the HTTP request to the delivery attempt form its trace, and the webhook request carries it on", async () => {
    const orderId = await orderCreated();
    const validated = await backoffice.post(`/api/v1/orders/${orderId}/validate`, undefined, {
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`,
    });
    expect(validated.status).toBe(200);

    const [, traceId, spanId] = TRACEPARENT.exec((await deliveryOf(orderId)).headers.traceparent ?? "") ?? [];
    expect(traceId).toBe(TRACE_ID);
    const attemptIn = (s: ReadableSpan[]) => s.find((span) => span.spanContext().spanId === spanId);
    // The attempt's span ends before its ancestors do (distributed, the fan-out's span lasts until
    // the deliveries it sent first are written): wait for the whole chain, up to the request.
    const spans = await spansUntil(TRACE_ID, (s) => {
      const found = attemptIn(s);
      return found !== undefined && ancestry(found, s).at(-1) === "POST /api/v1/orders/:id/validate";
    });
    const attempt = attemptIn(spans);
    expect(attempt?.name).toBe("deliver sales_order_validated");

    // One chain, each span the child of the one before, up to the request's span under the caller's.
    const chain = ancestry(attempt!, spans);
    expect(chain[0]).toBe("deliver sales_order_validated");
    expect(chain.at(-1)).toBe("POST /api/v1/orders/:id/validate");
    expect(chain).toEqual(
      expect.arrayContaining([
        "fan-out sales_order_validated",
        `publish ${channelOf("sales_order_validated")}`,
        "orders.validate",
        "gateway.rest",
      ]),
    );
    expect(chain.indexOf("fan-out sales_order_validated")).toBeLessThan(
      chain.indexOf(`publish ${channelOf("sales_order_validated")}`),
    );
    expect(chain.indexOf(`publish ${channelOf("sales_order_validated")}`)).toBeLessThan(
      chain.indexOf("orders.validate"),
    );
    const request = spans.find((s) => s.name === "POST /api/v1/orders/:id/validate")!;
    expect(request.parentSpanContext?.spanId).toBe(CALLER_SPAN_ID);
    expect(request.attributes["http.response.status_code"]).toBe(200);
    // orders.validate ran on the other node: its parent came over NATS in ctx.meta.
    const validate = spans.find((s) => s.name === "orders.validate")!;
    expect(validate.resource.attributes["service.instance.id"]).toBeDefined();
    expect(validate.attributes["moleculer.node_id"]).toBe("traces-orders");
    expect(request.instrumentationScope.name).toBe("order-intake");
  });

  it("when the traceparent is malformed, then it is ignored: the request succeeds in a trace of its own, carried to the delivery", async () => {
    const orderId = await orderCreated();
    const validated = await backoffice.post(`/api/v1/orders/${orderId}/validate`, undefined, {
      traceparent: `00-${TRACE_ID.toUpperCase()}-nonsense-01`,
    });
    expect(validated.status).toBe(200);

    const [, traceId] = TRACEPARENT.exec((await deliveryOf(orderId)).headers.traceparent ?? "") ?? [];
    expect(traceId).toBeDefined();
    expect(traceId).not.toBe(TRACE_ID);
    const spans = await spansUntil(traceId, (s) => s.some((span) => span.name === "POST /api/v1/orders/:id/validate"));
    const request = spans.find((s) => s.name === "POST /api/v1/orders/:id/validate");
    expect(request).toBeDefined();
    expect(request!.parentSpanContext).toBeUndefined();
  });

  it("when no spans are recorded (no exporter), then the caller's traceparent reaches the subscriber unchanged", async () => {
    await stopRecording();
    exporter.reset();
    const orderId = await orderCreated();
    const sent = `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`;
    const validated = await backoffice.post(`/api/v1/orders/${orderId}/validate`, undefined, { traceparent: sent });
    expect(validated.status).toBe(200);

    expect((await deliveryOf(orderId)).headers.traceparent).toBe(sent);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
