/**
 * Webhook delivery under faults, end to end: real webhooks processes (dist/, spawned), a
 * private NATS JetStream server, PostgreSQL, and real HTTP receivers. Events come from an
 * outbox in this test process, published by the same relay the orders service runs.
 *
 * Needs PostgreSQL (TEST_DATABASE_URL or testcontainers) and nats-server; `npm test` builds dist/.
 */
import type { Principal } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { ANSWER_WITHIN_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource, type TestEvent } from "../helpers/event-source";
import { NatsServer } from "../helpers/nats-server";
import { requires } from "../helpers/prerequisites";
import { sampleTotalsByProcess } from "../helpers/process-metrics";
import { disposeAll, ServiceProcess } from "../helpers/processes";
import { startReceiver, type ReceivedWebhook, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(120_000);

const WEBHOOKS_ENV = {
  // The receivers answer within it even on a busy machine: only the hanging one times out.
  WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
  WEBHOOK_RETRY_SCHEDULE: "0.3,0.5,1,1,1,1",
  WEBHOOK_DISPATCH_INTERVAL_MS: "100",
};

interface DeliveryJson {
  webhookId: string;
  status: string;
  attempts: { statusCode: number | null; error: string | null }[];
}

// Several real processes share one database and a NATS they can lose: the embedded fallback
// cannot stand in. CI sets TEST_DATABASE_URL and has nats-server, so CI always runs these.
const describeWithServers = requires(["postgres", "nats-server"]).describe;

describeWithServers("webhooks under faults (real processes, NATS JetStream, PostgreSQL)", () => {
  let nats: NatsServer;
  let database: TestDatabase;
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let processes: ServiceProcess[] = [];
  let run = 0;

  const webhooksProcess = async (name: string) => {
    const p = await ServiceProcess.create({
      name,
      services: ["webhooks"],
      transporter: nats.url,
      databaseUrl: database.url,
      env: WEBHOOKS_ENV,
    });
    processes.push(p);
    return p;
  };

  /** A client of its own for each test: its subscriptions receive only that test's events. */
  const newPartner = (): Principal => ({
    ...principal("partner", ["partner", "webhooks"]),
    webhookEvents: [...EVENTS],
  });

  async function subscribe(client: Principal, paths: string[]): Promise<number[]> {
    await t.broker.waitForServices(["webhooks"], 30_000);
    const ids: number[] = [];
    for (const path of paths) {
      const s = await t.broker.call<{ id: number }, object>(
        "webhooks.subscribe",
        { event: "sales_order_validated", url: `${receiver.url}${path}` },
        { meta: { client } },
      );
      ids.push(s.id);
    }
    return ids;
  }

  function events(client: Principal, from: number, count: number): TestEvent[] {
    return Array.from({ length: count }, (_, i) => ({
      event: "sales_order_validated" as const,
      ownerClientId: client.clientId,
      entityId: from + i,
      data: { run, seq: from + i, code: `ORD-20261121-${String(from + i).padStart(6, "0")}` },
    }));
  }

  /** The (path, seq) pairs that were expected and never received. */
  function missing(received: ReceivedWebhook[], paths: string[], count: number): string[] {
    const got = new Set(received.map((r) => `${r.path}#${(JSON.parse(r.body) as { seq: number }).seq}`));
    return paths.flatMap((p) => Array.from({ length: count }, (_, seq) => `${p}#${seq}`)).filter((k) => !got.has(k));
  }

  async function waitForAll(paths: string[], count: number, timeoutMs = 60_000): Promise<void> {
    await receiver.waitFor(
      (r) => missing(r, paths, count).length === 0,
      timeoutMs,
      () =>
        `${missing(receiver.received, paths, count).length} of ${paths.length * count} (event, subscription) pairs missing`,
    );
  }

  async function deliveriesOf(client: Principal, subscriptionId: number): Promise<DeliveryJson[]> {
    const all: DeliveryJson[] = [];
    let cursor: string | undefined;
    do {
      const page = await t.broker.call<{ items: DeliveryJson[]; nextCursor: string | null }, object>(
        "webhooks.deliveries",
        { id: subscriptionId, limit: 500, ...(cursor ? { cursor } : {}) },
        { meta: { client } },
      );
      all.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    if (database.kind === "pglite")
      throw new Error("These tests need PostgreSQL shared by several processes: set TEST_DATABASE_URL.");
    nats = await NatsServer.start();
    // This process plays the event-raising service: its outbox relay publishes over the private NATS.
    t = await startTestBroker({
      services: [],
      database,
      env: { TRANSPORTER: nats.url, NODE_ID: "e2e-event-source", OUTBOX_RELAY_INTERVAL_MS: "100" },
    });
    source = await addEventSource(t.broker, "e2e_source");
  });

  afterAll(async () => {
    await disposeAll(processes);
    await t?.stop();
    await nats?.dispose();
    await database?.drop();
  });

  beforeEach(async () => {
    run += 1;
    receiver = await startReceiver();
  });

  afterEach(async () => {
    await disposeAll(processes);
    processes = [];
    await receiver.close();
  });

  it("when the receiver answers 500 and then 200, then every delivery is retried with the same webhook-id and succeeds", async () => {
    const webhooks = await (await webhooksProcess("webhooks-flaky")).start();
    const client = newPartner();
    const [subscriptionId] = await subscribe(client, ["/flaky"]);
    receiver.answerWith((_r, before) => (before === 0 ? 500 : 200));

    await source.emit(events(client, 0, 20));
    await receiver.waitFor((r) => r.length >= 40 && missing(r, ["/flaky"], 20).length === 0, 30_000);

    // The receiver has answered; the outcome is recorded just after.
    const deliveries = await waitForDeliveries(client, subscriptionId, 20, "succeeded");
    for (const d of deliveries) {
      expect(d.attempts.map((a) => a.statusCode)).toEqual([500, 200]);
      expect(receiver.received.filter((r) => r.headers["webhook-id"] === d.webhookId)).toHaveLength(2);
    }
    expect(webhooks.running).toBe(true);
  });

  it("when the receiver never answers, then the attempt times out and the retry delivers", async () => {
    await (await webhooksProcess("webhooks-hang")).start();
    const client = newPartner();
    const [subscriptionId] = await subscribe(client, ["/hang"]);
    receiver.answerWith((_r, before) => (before === 0 ? "hang" : 200));

    await source.emit(events(client, 0, 5));
    await receiver.waitFor((r) => r.length >= 10, 30_000);
    const deliveries = await waitForDeliveries(client, subscriptionId, 5, "succeeded");
    for (const d of deliveries) {
      expect(d.attempts).toEqual([
        expect.objectContaining({ statusCode: null, error: expect.stringContaining(`${ANSWER_WITHIN_MS} ms`) }),
        expect.objectContaining({ statusCode: 200 }),
      ]);
    }
  });

  it("when the webhooks process is killed with SIGKILL in the middle of a burst of 500 events, then after a restart every pair arrives", async () => {
    const webhooks = await (await webhooksProcess("webhooks-killed")).start();
    const client = newPartner();
    const paths = ["/k1", "/k2"];
    await subscribe(client, paths);

    await source.emit(events(client, 0, 500));
    await receiver.waitFor((r) => r.length >= 150, 30_000);
    await webhooks.kill("SIGKILL");
    const beforeRestart = receiver.received.length;
    expect(beforeRestart).toBeLessThan(1000);

    await webhooks.start();
    await waitForAll(paths, 500);
  });

  it("when NATS is restarted during a burst, then no event is lost", async () => {
    await (await webhooksProcess("webhooks-nats-restart")).start();
    const client = newPartner();
    const paths = ["/n1"];
    await subscribe(client, paths);

    await source.emit(events(client, 0, 250));
    await receiver.waitFor((r) => r.length >= 50, 30_000);
    const restarted = nats.restart(1_000);
    // Raised while NATS is down or coming back: they wait in the outbox.
    await source.emit(events(client, 250, 250));
    await restarted;
    await waitForAll(paths, 500);
  });

  it("when events are raised while no webhooks process runs, then all are delivered once one starts", async () => {
    const webhooks = await (await webhooksProcess("webhooks-late")).start();
    const client = newPartner();
    const paths = ["/l1", "/l2"];
    await subscribe(client, paths);
    expect(await webhooks.stop()).toBe(0);

    await source.emit(events(client, 0, 100));
    // Published to JetStream by the relay, with nobody consuming.
    const deadline = Date.now() + 10_000;
    while ((await source.unpublished()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await source.unpublished()).toBe(0);
    expect(receiver.received).toHaveLength(0);

    await webhooks.start();
    await waitForAll(paths, 100);
  });

  it("when two webhooks processes share a burst, then each delivers some, every pair arrives and no webhook-id twice unless after a failed attempt", async () => {
    // One after the other: two replicas creating the same durable JetStream consumer at the same
    // instant make one fail to start (as in test/helpers/cluster.ts).
    const first = await (await webhooksProcess("webhooks-a")).start();
    const pair = [first, await (await webhooksProcess("webhooks-b")).start()];
    const client = newPartner();
    const paths = ["/s1", "/s2"];
    const subscriptionIds = await subscribe(client, paths);
    // A short pause per request makes two sends of one delivery at once visible as an overlap.
    receiver.answerWith(() => ({ status: 200, afterMs: 20 }));

    await source.emit(events(client, 0, 500));
    await waitForAll(paths, 500);

    const deliveredBy = await sampleTotalsByProcess(pair, "webhook_delivery_attempts_total", { outcome: "delivered" });
    expect(Object.entries(deliveredBy).filter(([, delivered]) => delivered === 0)).toEqual([]);
    expect(receiver.overlapping).toEqual([]);
    // One delivery is one event (its webhook-id, the same for both subscriptions) to one subscription (its path).
    const counts = new Map<string, number>();
    for (const r of receiver.received) {
      const delivery = `${r.path} ${r.headers["webhook-id"]}`;
      counts.set(delivery, (counts.get(delivery) ?? 0) + 1);
    }
    const repeated = [...counts].filter(([, n]) => n > 1).map(([delivery]) => delivery.split(" "));
    if (repeated.length > 0) {
      const deliveries = await Promise.all(subscriptionIds.map((id) => deliveriesOf(client, id)));
      // A repeat is allowed only after an attempt that failed; name each one that had none.
      const withAttempts = repeated.map(([path, id]) => ({
        path,
        id,
        attempts: deliveries[paths.indexOf(path)].find((d) => d.webhookId === id)?.attempts,
      }));
      expect(
        withAttempts.filter(({ attempts }) => !attempts?.some((a) => a.error !== null || (a.statusCode ?? 0) >= 300)),
      ).toEqual([]);
    }
  });

  async function waitForDeliveries(
    client: Principal,
    subscriptionId: number,
    count: number,
    status: string,
  ): Promise<DeliveryJson[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const deliveries = await deliveriesOf(client, subscriptionId);
      if (deliveries.length === count && deliveries.every((d) => d.status === status)) return deliveries;
      if (Date.now() > deadline)
        throw new Error(`Deliveries not all ${status}: ${JSON.stringify(deliveries.map((d) => d.status))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});
