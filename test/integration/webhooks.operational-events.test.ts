/**
 * Issue 21, part 7: the owner is told when a delivery gives up after its whole schedule
 * (`webhook_delivery_exhausted`) and when a subscription that had been failing for at least one
 * retry interval succeeds again (`webhook_endpoint_recovered`), on its subscriptions to them,
 * like `webhook_endpoint_disabled`. Real PostgreSQL, a real receiver.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { Knex } from "knex";
import { webhookBodySchemas } from "../../gateway/openapi/webhooks";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import type { Principal } from "../../shared/security/auth";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface SubscriptionJson {
  id: number;
}

const RETRY_SECONDS = 0.2;
const ATTEMPTS = 3;

const newPartner = (): Principal => ({
  ...principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]),
  webhookEvents: [...EVENTS],
});

const ajv = new Ajv2020({ strict: true });
addFormats(ajv);
const bodies = webhookBodySchemas(SERVICE_DESCRIPTIONS);
const validExhausted = ajv.compile(bodies.webhook_delivery_exhausted);
const validRecovered = ajv.compile(bodies.webhook_endpoint_recovered);

describe("webhooks: operational events", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  let seq = 0;

  const subscribe = (as: Principal, event: string, path: string) =>
    t.call<SubscriptionJson>("webhooks.subscribe", { event, url: `${receiver.url}${path}` }, as);
  const emit = async (owner: Principal, count = 1) => {
    const from = seq + 1;
    seq += count;
    await source.emit(
      Array.from({ length: count }, (_, i) => ({
        event: "sales_order_created" as const,
        ownerClientId: owner.clientId,
        data: { seq: from + i },
      })),
    );
    return from;
  };
  const on = (path: string) => receiver.received.filter((r) => r.path === path);
  const bodiesOn = (path: string) => on(path).map((r) => JSON.parse(r.body) as Record<string, unknown>);
  /** The operational events this owner's outbox rows hold, by name. */
  const announced = async (owner: Principal, event: string) => {
    const row = (await db
      .withSchema("webhooks")
      .table("outbox")
      .where({ event, owner_client_id: owner.clientId })
      .count({ n: "*" })
      .first()) as { n: string | number };
    return Number(row.n);
  };

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_RETRY_SCHEDULE: Array(ATTEMPTS - 1)
          .fill(String(RETRY_SECONDS))
          .join(","),
        WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_operational_source");
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  it("when a delivery fails every attempt of its schedule, then its owner hears webhook_delivery_exhausted naming the subscription and the delivery, and nobody else does", async () => {
    const owner = newPartner();
    const stranger = newPartner();
    receiver.answerWith((r) => (r.path === "/down" ? 503 : 200));
    const down = await subscribe(owner, "sales_order_created", "/down");
    await subscribe(owner, "webhook_delivery_exhausted", "/told-exhausted");
    await subscribe(stranger, "webhook_delivery_exhausted", "/stranger-exhausted");

    await emit(owner);
    await receiver.waitFor(() => on("/told-exhausted").length === 1, EVENTUALLY_MS);

    const [notice] = bodiesOn("/told-exhausted");
    expect({ valid: validExhausted(notice), errors: validExhausted.errors ?? null }).toEqual({
      valid: true,
      errors: null,
    });
    const [delivery] = (
      await t.call<{ items: { id: number; webhookId: string; status: string }[] }>(
        "webhooks.deliveries",
        { id: down.id },
        owner,
      )
    ).items;
    expect(delivery.status).toBe("failed");
    expect(notice).toMatchObject({
      subscription: { id: down.id, event: "sales_order_created", url: `${receiver.url}/down` },
      delivery: { id: delivery.id, webhookId: delivery.webhookId, event: "sales_order_created", attempts: ATTEMPTS },
      lastAttempt: { statusCode: 503, error: null },
    });
    expect(on("/down")).toHaveLength(ATTEMPTS);
    expect(on("/told-exhausted")[0].headers["x-webhook-event"]).toBe("webhook_delivery_exhausted");
    expect(on("/stranger-exhausted")).toEqual([]);
  });

  it("when a delivery of webhook_delivery_exhausted itself gives up, then it announces nothing: a failing subscription to it does not feed itself", async () => {
    const owner = newPartner();
    receiver.answerWith((r) => (r.path === "/down-2" || r.path === "/told-but-down" ? 500 : 200));
    await subscribe(owner, "sales_order_created", "/down-2");
    await subscribe(owner, "webhook_delivery_exhausted", "/told-but-down");

    await emit(owner);
    await receiver.waitFor(() => on("/told-but-down").length === ATTEMPTS, EVENTUALLY_MS);
    // Long enough for a second notice to have been raised and sent, had there been one.
    await new Promise((r) => setTimeout(r, ATTEMPTS * RETRY_SECONDS * 1000 + 500));
    expect(on("/told-but-down")).toHaveLength(ATTEMPTS);
    expect(await announced(owner, "webhook_delivery_exhausted")).toBe(1);
  });

  it("when a subscription that failed for a retry interval succeeds again, then its owner hears webhook_endpoint_recovered with since when it had failed", async () => {
    const owner = newPartner();
    receiver.answerWith((r, before) => (r.path === "/flaky" && before === 0 ? 500 : 200));
    const flaky = await subscribe(owner, "sales_order_created", "/flaky");
    await subscribe(owner, "webhook_endpoint_recovered", "/told-recovered");

    await emit(owner);
    await receiver.waitFor(() => on("/told-recovered").length === 1, EVENTUALLY_MS);
    const [notice] = bodiesOn("/told-recovered");
    expect({ valid: validRecovered(notice), errors: validRecovered.errors ?? null }).toEqual({
      valid: true,
      errors: null,
    });
    const [failed, succeeded] = on("/flaky");
    expect(notice).toMatchObject({ subscription: { id: flaky.id, url: `${receiver.url}/flaky` } });
    const { failingSince, recoveredAt } = notice as { failingSince: string; recoveredAt: string };
    expect(Date.parse(recoveredAt) - Date.parse(failingSince)).toBeGreaterThanOrEqual(RETRY_SECONDS * 1000);
    expect(Date.parse(failingSince)).toBeLessThanOrEqual(failed.receivedAt);
    expect(Date.parse(recoveredAt)).toBeLessThanOrEqual(succeeded.receivedAt);
    expect(await announced(owner, "webhook_endpoint_recovered")).toBe(1);
  });

  it("when a failure is followed at once by another delivery's success, then nothing is announced: it was not failing for a retry interval", async () => {
    const owner = newPartner();
    // Of two deliveries sent together, the first request fails and the other, answered a little later, succeeds.
    let first = true;
    receiver.answerWith((r) => {
      if (r.path !== "/blip") return 200;
      if (!first) return { status: 200, afterMs: 30 };
      first = false;
      return 500;
    });
    await subscribe(owner, "sales_order_created", "/blip");
    await subscribe(owner, "webhook_endpoint_recovered", "/told-blip");

    await emit(owner, 2);
    // Both deliveries arrive, the failed one again after its retry.
    await receiver.waitFor(() => on("/blip").length === 3, EVENTUALLY_MS);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(on("/told-blip")).toEqual([]);
    expect(await announced(owner, "webhook_endpoint_recovered")).toBe(0);
  });
});
