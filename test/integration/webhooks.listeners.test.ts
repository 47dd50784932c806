/**
 * Issue 23: who listens to each event is kept in memory per webhooks process
 * (services/webhooks/webhooks.listeners.ts). An event nobody listens to costs no statement; every
 * change that can add a listener (create, enable, a new URL) is seen by this process before the
 * answer, by the other replicas on the broadcast, and by anyone within LISTENERS_TTL_MS when the
 * broadcast is lost; a deleted or disabled subscription receives nothing even from a stale list.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { LISTENERS_TTL_MS, type SubscriptionListeners } from "../../services/webhooks/webhooks.listeners";
import { openDatabase } from "../../shared/database/db";
import { BROADCASTS, EVENTS, type DomainEvent, type EventName } from "../../shared/messaging/events";
import type { Principal } from "../../shared/security/auth";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { deleteStreams } from "../helpers/jetstream";
import { requires } from "../helpers/prerequisites";
import { TEST_NAMESPACE } from "../helpers/processes";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(60_000);

/** A client of its own for each test: the lists are per event name, the tests tell their own apart by owner. */
const newOwner = (): Principal => ({ ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] });
let seq = 0;

/** An event of `owner` happening now, as the relay would publish it. */
const eventNow = (event: EventName, owner: Principal): DomainEvent => ({
  id: `listeners-${++seq}`,
  event,
  ownerClientId: owner.clientId,
  entity: "order",
  entityId: seq,
  occurredAt: new Date().toISOString(),
  data: { seq },
});

const listenersOf = (t: TestBroker) =>
  (t.broker.getLocalService("webhooks") as Service & { listeners: SubscriptionListeners }).listeners;
const dbOf = (t: TestBroker) => (t.broker.getLocalService("webhooks") as Service & { db: Knex }).db;
/** The subscriptions of `owner` that fan-out in `t` would consider for its event now. */
const heard = async (t: TestBroker, event: EventName, owner: Principal) =>
  (await listenersOf(t).of(eventNow(event, owner)))
    .filter((s) => s.client_id === owner.clientId)
    .map((s) => s.id)
    .sort((a, b) => a - b);

/** Resolves once `check` holds, polling; fails after EVENTUALLY_MS. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + EVENTUALLY_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("webhooks: who listens to each event, in one process", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const subscribe = (owner: Principal, event: EventName, path: string) =>
    t.call<{ id: number }>("webhooks.subscribe", { event, url: `${receiver.url}${path}` }, owner);

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: { WEBHOOK_DISPATCH_INTERVAL_MS: "50", OUTBOX_RELAY_INTERVAL_MS: "50" },
    });
    source = await addEventSource(t.broker, "webhooks_listeners_source");
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    await db?.destroy();
  });

  it("when an event nobody listens to is fanned out again, then it runs no statement at all", async () => {
    const owner = newOwner();
    const statements: string[] = [];
    const count = (q: { sql: string }) => void statements.push(q.sql);
    await heard(t, "contact_reference_created", owner);
    dbOf(t).on("query", count);
    try {
      for (let i = 0; i < 20; i++) expect(await heard(t, "contact_reference_created", owner)).toEqual([]);
    } finally {
      dbOf(t).off("query", count);
    }
    expect(statements).toEqual([]);
  });

  it("when a subscription is created after its event's list was read, then the next event reaches it", async () => {
    const owner = newOwner();
    expect(await heard(t, "sales_order_cancelled", owner)).toEqual([]);
    const { id } = await subscribe(owner, "sales_order_cancelled", "/created");
    expect(await heard(t, "sales_order_cancelled", owner)).toEqual([id]);
    await source.emit([{ event: "sales_order_cancelled", ownerClientId: owner.clientId, data: { created: ++seq } }]);
    await receiver.waitFor((r) => r.some((x) => x.path === "/created"), EVENTUALLY_MS);
  });

  it("when a subscription is disabled, enabled, moved and deleted, then each change is heard before the answer", async () => {
    const owner = newOwner();
    const { id } = await subscribe(owner, "sales_order_cancelled", "/moving");
    const endpoints = async () =>
      (await listenersOf(t).of(eventNow("sales_order_cancelled", owner)))
        .filter((s) => s.id === id)
        .map((s) => s.endpoint);
    await t.call("webhooks.disable", { id }, owner);
    expect(await heard(t, "sales_order_cancelled", owner)).toEqual([]);
    await t.call("webhooks.enable", { id }, owner);
    expect(await heard(t, "sales_order_cancelled", owner)).toEqual([id]);
    const moved = `http://127.0.0.2:${new URL(receiver.url).port}`;
    await t.call("webhooks.update", { id, url: `${moved}/moved` }, owner);
    expect(await endpoints()).toEqual([moved]);
    await t.call("webhooks.unsubscribe", { id }, owner);
    expect(await heard(t, "sales_order_cancelled", owner)).toEqual([]);
  });

  it("when a subscription is written behind the service's back (a lost broadcast), then it is heard within LISTENERS_TTL_MS", async () => {
    const owner = newOwner();
    expect(await heard(t, "sales_order_created", owner)).toEqual([]);
    const [row] = await db<{ id: number; client_id: number; event: string; url: string; key: string; secret: string }>(
      "webhooks.subscriptions",
    )
      .insert({
        client_id: owner.clientId,
        event: "sales_order_created",
        url: `${receiver.url}/behind`,
        key: "k",
        secret: "s",
      })
      .returning("id");
    const written = Date.now();
    try {
      await eventually(async () => (await heard(t, "sales_order_created", owner)).includes(row.id));
      // At most one expiry late (the bound docs/architecture.md promises), plus a poll.
      expect(Date.now() - written).toBeLessThan(LISTENERS_TTL_MS + EVENTUALLY_MS / 10);
    } finally {
      await db("webhooks.subscriptions").where({ id: row.id }).delete();
    }
  });

  it("when a deleted subscription is still in a stale list, then its event creates no delivery", async () => {
    const owner = newOwner();
    const { id: gone } = await subscribe(owner, "sales_order_validated", "/gone");
    const { id: witness } = await subscribe(owner, "sales_order_validated", "/witness");
    expect(await heard(t, "sales_order_validated", owner)).toEqual([gone, witness].sort((a, b) => a - b));
    // Behind the service's back: the list still names it.
    await db("webhooks.subscriptions").where({ id: gone }).delete();
    expect(await heard(t, "sales_order_validated", owner)).toContain(gone);
    await source.emit([{ event: "sales_order_validated", ownerClientId: owner.clientId, data: { stale: ++seq } }]);
    // One statement stores an event's deliveries: the witness's proves the fan-out is done.
    await receiver.waitFor((r) => r.some((x) => x.path === "/witness"), EVENTUALLY_MS);
    expect(await db("webhooks.deliveries").where({ subscription_id: gone })).toEqual([]);
    expect(receiver.received.filter((x) => x.path === "/gone")).toEqual([]);
  });
});

// Replicas share a PostgreSQL and hear each other's broadcasts over NATS: the embedded fallback has neither.
requires(["postgres", "nats"]).describe("webhooks: who listens to each event, across two replicas", () => {
  let replicaA: TestBroker;
  let replicaB: TestBroker;
  const env = (replica: string) => ({
    TRANSPORTER: process.env.TEST_NATS_URL ?? "",
    NODE_ID: `listeners-${replica}-${process.pid}`,
  });
  const subscribeThroughA = (owner: Principal, event: EventName) =>
    replicaA.call<{ id: number }>("webhooks.subscribe", { event, url: "http://127.0.0.1:9/hook" }, owner);

  beforeAll(async () => {
    replicaA = await startTestBroker({ services: ["webhooks"], env: env("a") });
    replicaB = await startTestBroker({ services: ["webhooks"], env: env("b"), database: replicaA.database });
    // A broadcast reaches the nodes known to listen to it: each replica learns the other's
    // listener first (a replica that starts meanwhile reads its lists afresh anyway).
    const knows = (t: TestBroker, other: TestBroker) =>
      (
        t.broker.registry as unknown as {
          events: { getAllEndpoints(event: string): { id: string }[] };
        }
      ).events
        .getAllEndpoints(BROADCASTS.subscriptionsChanged.name)
        .some((endpoint) => endpoint.id === other.broker.nodeID);
    await eventually(async () => knows(replicaA, replicaB) && knows(replicaB, replicaA));
  });
  afterAll(async () => {
    await replicaB?.stop();
    await replicaA?.stop();
    if (process.env.TEST_NATS_URL) await deleteStreams(process.env.TEST_NATS_URL, TEST_NAMESPACE);
  });

  /** Runs `work` and waits until replica B has forgotten its lists at least once since it began. */
  async function forgettingInB(work: () => Promise<void>): Promise<void> {
    const listeners = listenersOf(replicaB);
    const forget = listeners.forget.bind(listeners);
    let forgotten = 0;
    listeners.forget = () => {
      forgotten++;
      forget();
    };
    try {
      await work();
      await eventually(async () => forgotten > 0);
    } finally {
      listeners.forget = forget;
    }
  }

  it("when a subscription is created through one replica, then the other forgets its list on the broadcast and hears it", async () => {
    const owner = newOwner();
    expect(await heard(replicaB, "sales_order_created", owner)).toEqual([]);
    let id = 0;
    await forgettingInB(async () => {
      id = (await subscribeThroughA(owner, "sales_order_created")).id;
    });
    expect(await heard(replicaB, "sales_order_created", owner)).toEqual([id]);
  });

  it("when a subscription is enabled through one replica, then the other forgets its list on the broadcast and hears it", async () => {
    const owner = newOwner();
    const { id } = await subscribeThroughA(owner, "sales_order_cancelled");
    await forgettingInB(async () => void (await replicaA.call("webhooks.disable", { id }, owner)));
    expect(await heard(replicaB, "sales_order_cancelled", owner)).toEqual([]);
    await forgettingInB(async () => void (await replicaA.call("webhooks.enable", { id }, owner)));
    expect(await heard(replicaB, "sales_order_cancelled", owner)).toEqual([id]);
  });
});
