/**
 * Issue 21 (parts 1-4) in the distributed mode: two real webhooks processes (dist/, spawned) over
 * a private NATS and one PostgreSQL, called over the transporter as the gateway would, with a real
 * receiver. The newest deliveries come in one call; what the endpoint answered is kept; a refusal
 * of a disabled subscription keeps its problem type across NATS; an Idempotency-Key and a repeated
 * recovery act once whichever process each call lands on.
 *
 * Needs PostgreSQL (TEST_DATABASE_URL) and nats-server, as webhooks.faults.test.ts; `npm test` builds dist/.
 */
import type { Principal, RequestMeta } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { ANSWER_WITHIN_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { NatsServer } from "../helpers/nats-server";
import { requires } from "../helpers/prerequisites";
import { disposeAll, ServiceProcess } from "../helpers/processes";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(120_000);

interface DeliveryJson {
  id: number;
  status: string;
  event: string;
  attempts: { number: number; trigger: string; statusCode: number | null; responseBody: string | null }[];
}

const describeWithServers = requires(["postgres", "nats-server"]).describe;

describeWithServers("webhooks subscriber API across two processes (NATS JetStream, PostgreSQL)", () => {
  let nats: NatsServer;
  let database: TestDatabase;
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let processes: ServiceProcess[] = [];
  const client: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };

  /** A call over NATS as `client`; the meta the gateway would read (status, replay header) comes back. */
  async function call<T>(action: string, params: object, idempotencyKey?: string) {
    const meta: RequestMeta & { $responseHeaders?: Record<string, string> } = {
      client,
      ...(idempotencyKey ? { idempotencyKey } : {}),
    };
    const result = await t.broker.call<T, object>(action, params, { meta });
    return { result, status: meta.$statusCode, replayed: meta.$responseHeaders?.["Idempotent-Replayed"] === "true" };
  }
  const deliveries = async (id: number, query: object = {}) =>
    (await call<{ items: DeliveryJson[] }>("webhooks.deliveries", { id, ...query })).result.items;

  async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    if (database.kind === "pglite") throw new Error("These tests need PostgreSQL shared by several processes.");
    nats = await NatsServer.start();
    t = await startTestBroker({
      services: [],
      database,
      env: { TRANSPORTER: nats.url, NODE_ID: "e2e-subscriber-api", OUTBOX_RELAY_INTERVAL_MS: "100" },
    });
    source = await addEventSource(t.broker, "e2e_subscriber_api");
    receiver = await startReceiver();
    for (const name of ["webhooks-one", "webhooks-two"]) {
      const p = await ServiceProcess.create({
        name,
        services: ["webhooks"],
        transporter: nats.url,
        databaseUrl: database.url,
        env: {
          WEBHOOK_RETRY_SCHEDULE: "0.3,0.3",
          WEBHOOK_DISPATCH_INTERVAL_MS: "100",
          WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
        },
      });
      processes.push(p);
      await p.start();
    }
    await t.broker.waitForServices(["webhooks"], 30_000);
  });

  afterAll(async () => {
    await disposeAll(processes);
    processes = [];
    await receiver?.close();
    await t?.stop();
    await nats?.dispose();
    await database?.drop();
  });

  it("when events are delivered, then the newest come first in one call, with what the endpoint answered", async () => {
    receiver.answerWith((_r, before) => (before === 0 ? { status: 500, afterMs: 0, body: "try later" } : 200));
    const { result: sub } = await call<{ id: number }>("webhooks.subscribe", {
      event: "sales_order_validated",
      url: `${receiver.url}/newest`,
    });
    await source.emit(
      Array.from({ length: 5 }, (_, i) => ({
        event: "sales_order_validated" as const,
        ownerClientId: client.clientId,
        entityId: i + 1,
        data: { seq: i },
      })),
    );
    const all = await until(
      "five deliveries succeeding",
      () => deliveries(sub.id),
      (d) => d.length === 5 && d.every((x) => x.status === "succeeded"),
    );
    const newest = await deliveries(sub.id, { order: "desc", limit: 2 });
    expect(newest.map((d) => d.id)).toEqual([all[4].id, all[3].id]);
    expect(newest[0].attempts).toEqual([
      expect.objectContaining({ number: 1, trigger: "scheduled", statusCode: 500, responseBody: "try later" }),
      expect.objectContaining({ number: 2, trigger: "retry", statusCode: 200, responseBody: "ok" }),
    ]);
    const found = await call<{ items: DeliveryJson[] }>("webhooks.searchDeliveries", {
      status: "succeeded",
      limit: 500,
    });
    expect(found.result.items.map((d) => d.id)).toEqual(all.map((d) => d.id));
  });

  it("when a subscription is disabled, then a test is refused with its problem type across NATS; an Idempotency-Key and a repeated recovery act once on either process", async () => {
    receiver.answerWith((r) => (r.path === "/gone" ? 410 : 200));
    const { result: gone } = await call<{ id: number }>("webhooks.subscribe", {
      event: "sales_order_created",
      url: `${receiver.url}/gone`,
    });
    await call("webhooks.sendTest", { id: gone.id });
    await until(
      "the 410 disabling it",
      () => call<{ status: string }>("webhooks.get", { id: gone.id }),
      (s) => s.result.status === "disabled",
    );
    await expect(call("webhooks.sendTest", { id: gone.id })).rejects.toMatchObject({
      code: 409,
      type: "SUBSCRIPTION_DISABLED",
      data: { subscriptionId: gone.id },
    });
    await call("webhooks.enable", { id: gone.id });
    receiver.answerWith(() => 200);

    // Eight calls with one key, spread over both processes: one test event, every answer its own.
    const keyed = await Promise.allSettled(
      Array.from({ length: 8 }, () => call<DeliveryJson>("webhooks.sendTest", { id: gone.id }, "e2e-key")),
    );
    const made = new Set(keyed.flatMap((k) => (k.status === "fulfilled" ? [k.value.result.id] : [])));
    expect(made.size).toBe(1);
    for (const k of keyed)
      if (k.status === "rejected") expect(k.reason).toMatchObject({ type: "IDEMPOTENCY_KEY_IN_FLIGHT" });
    expect((await call("webhooks.sendTest", { id: gone.id }, "e2e-key")).replayed).toBe(true);

    const since = new Date(Date.now() - 60_000).toISOString();
    const recovers = await Promise.all(
      Array.from({ length: 4 }, () => call<{ id: number }>("webhooks.recover", { id: gone.id, since, all: true })),
    );
    expect(new Set(recovers.map((r) => r.result.id)).size).toBe(1);
    expect(recovers.map((r) => r.status).sort()).toEqual([200, 200, 200, 202]);
    const tests = await deliveries(gone.id, { event: "webhook_test" });
    expect(tests).toHaveLength(2);
  });
});
