import type { Knex } from "knex";
import { Webhook } from "standardwebhooks";
import type { Principal, RequestMeta } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { channelOf, EVENTS, type DomainEvent } from "../../shared/messaging/events";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface SubscriptionJson {
  id: number;
  event: string;
  url: string;
  key?: string;
  secret?: string;
  createdAt: string;
}

interface DeliveryJson {
  id: number;
  webhookId: string;
  eventId: string;
  status: string;
  nextAttemptAt: string | null;
  payload: unknown;
  attempts: { attemptedAt: string; statusCode: number | null; error: string | null; durationMs: number }[];
}

const withEvents = (p: Principal, events: readonly string[] = EVENTS): Principal => ({
  ...p,
  webhookEvents: [...events],
});

describe("webhooks service", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const partner = withEvents(principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]));
  const otherPartner = withEvents(principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]));
  const backoffice = withEvents(
    principal("backoffice", ["crm", "catalogue", "orders:write", "orders:read", "orders:manage", "webhooks"]),
  );
  const limited = withEvents(principal("partner", ["partner", "webhooks"]), ["sales_order_validated"]);
  let seq = 0;

  async function call<T>(action: string, params: object, as: Principal): Promise<{ result: T; meta: RequestMeta }> {
    const meta: RequestMeta = { client: as };
    const result = await t.broker.call<T, object>(action, params, { meta });
    return { result, meta };
  }

  const subscribe = (as: Principal, event: string, path: string) =>
    call<SubscriptionJson>("webhooks.subscribe", { event, url: `${receiver.url}${path}` }, as);

  const deliveriesOf = async (as: Principal, id: number, query: object = {}) =>
    (await call<{ items: DeliveryJson[] }>("webhooks.deliveries", { id, ...query }, as)).result.items;

  const receivedOn = (path: string) => receiver.received.filter((r) => r.path === path);

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_RETRY_SCHEDULE: "0.2,0.2",
        // The receiver answers within it even on a busy machine: only the hanging one times out.
        WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_it_source");
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });
  beforeEach(() => receiver.answerWith(() => 200));

  describe("discovery and subscriptions", () => {
    it("when a client asks which events are available, then exactly its own events are listed, each described", async () => {
      const { result } = await call<{ event: string; description: string }[]>("webhooks.available", {}, limited);
      expect(result).toEqual([{ event: "sales_order_validated", description: expect.stringMatching(/validated/) }]);
      const all = await call<{ event: string }[]>("webhooks.available", {}, partner);
      expect(all.result.map((e) => e.event)).toEqual([...EVENTS]);
    });

    it("when a client subscribes, then 201 holds the key and the whsec_ secret; subscribing again answers 200 without them", async () => {
      const first = await subscribe(partner, "sales_order_created", "/created");
      expect(first.meta.$statusCode).toBe(201);
      expect(first.meta.$location).toBe(`/api/v1/webhooks/${first.result.id}`);
      expect(first.result).toMatchObject({
        event: "sales_order_created",
        url: `${receiver.url}/created`,
        key: expect.stringMatching(/^whk_/),
        secret: expect.stringMatching(/^whsec_/),
      });

      const again = await subscribe(partner, "sales_order_created", "/created");
      expect(again.meta.$statusCode ?? 200).toBe(200);
      expect(again.result.id).toBe(first.result.id);
      expect(again.result).not.toHaveProperty("key");
      expect(again.result).not.toHaveProperty("secret");
    });

    it("when a client subscribes to an event it may not use, then it is forbidden; an unknown event names `event`", async () => {
      await expect(subscribe(limited, "sales_order_created", "/x")).rejects.toMatchObject({
        code: 403,
        data: { event: "sales_order_created" },
      });
      await expect(subscribe(limited, "order_shipped", "/x")).rejects.toMatchObject({
        code: 422,
        type: "VALIDATION_ERROR",
        data: [{ field: "event" }],
      });
    });

    it("when the URL is not one, then 422 names `url`", async () => {
      await expect(
        call("webhooks.subscribe", { event: "sales_order_validated", url: "not a url" }, limited),
      ).rejects.toMatchObject({
        code: 422,
        data: { errors: [{ path: "url" }] },
      });
    });

    it("when a client lists, reads, rotates and deletes, then it sees only its own subscriptions and another's id is 404", async () => {
      const mine = (await subscribe(otherPartner, "sales_order_cancelled", "/mine")).result;
      const theirs = (await subscribe(partner, "sales_order_cancelled", "/theirs")).result;

      const list = (await call<{ items: SubscriptionJson[] }>("webhooks.list", {}, otherPartner)).result.items;
      expect(list.map((s) => s.id)).toEqual([mine.id]);
      expect((await call<SubscriptionJson>("webhooks.get", { id: mine.id }, otherPartner)).result).toMatchObject({
        id: mine.id,
        url: mine.url,
      });
      for (const action of ["webhooks.get", "webhooks.rotate", "webhooks.unsubscribe", "webhooks.deliveries"]) {
        await expect(call(action, { id: theirs.id }, otherPartner)).rejects.toMatchObject({ code: 404 });
      }

      const rotated = (await call<SubscriptionJson>("webhooks.rotate", { id: mine.id }, otherPartner)).result;
      expect(rotated.key).toMatch(/^whk_/);
      expect(rotated.key).not.toBe(mine.key);
      expect(rotated.secret).not.toBe(mine.secret);

      const deleted = await call<null>("webhooks.unsubscribe", { id: mine.id }, otherPartner);
      expect(deleted.meta.$statusCode).toBe(204);
      await expect(call("webhooks.get", { id: mine.id }, otherPartner)).rejects.toMatchObject({ code: 404 });
      // The other client's subscription is untouched.
      expect((await call<SubscriptionJson>("webhooks.get", { id: theirs.id }, partner)).result.id).toBe(theirs.id);
    });
  });

  describe("fan-out and delivery", () => {
    it("when an order event is raised, then its owner and the back office receive it, another partner does not, and the request verifies", async () => {
      const own = (await subscribe(partner, "sales_order_validated", "/own")).result;
      const other = (await subscribe(otherPartner, "sales_order_validated", "/other")).result;
      const office = (await subscribe(backoffice, "sales_order_validated", "/office")).result;

      const data = { id: 41, code: "ORD-20261121-000041", note: "ünïcödé", nested: { z: 1, a: [2, 1] } };
      await source.emit([{ event: "sales_order_validated", ownerClientId: partner.clientId, data }]);
      await receiver.waitFor(
        () => receivedOn("/own").length === 1 && receivedOn("/office").length === 1,
        EVENTUALLY_MS,
      );

      const [request] = receivedOn("/own");
      expect(request.body).toBe(JSON.stringify(data));
      expect(request.headers).toMatchObject({
        "content-type": "application/json",
        "x-webhook-event": "sales_order_validated",
        "x-webhook-key": own.key,
        "user-agent": expect.stringMatching(/^order-intake\/\d+\.\d+\.\d+/),
      });
      expect(new Webhook(own.secret ?? "").verify(request.body, request.headers)).toEqual(data);
      expect(() => new Webhook(office.secret ?? "").verify(request.body, request.headers)).toThrow();

      await new Promise((r) => setTimeout(r, 300));
      expect(receivedOn("/other")).toHaveLength(0);
      expect(await deliveriesOf(otherPartner, other.id)).toEqual([]);
    });

    it("when the same event is published twice, then it makes one delivery per subscription", async () => {
      const sub = (await subscribe(partner, "contact_reference_created", "/twice")).result;
      const event: DomainEvent = {
        id: `test-twice-${++seq}`,
        event: "contact_reference_created",
        ownerClientId: partner.clientId,
        entity: "contact_reference",
        entityId: 9,
        occurredAt: new Date().toISOString(),
        data: { id: 9 },
      };
      await t.broker.sendToChannel(channelOf("contact_reference_created"), event);
      await t.broker.sendToChannel(channelOf("contact_reference_created"), event);
      await receiver.waitFor(() => receivedOn("/twice").length >= 1, EVENTUALLY_MS);
      // The outcome is written after the receipt (in a batch): wait for it rather than a fixed
      // pause, which a loaded machine outran; then a little more for a second send that must not come.
      await waitForStatus(partner, sub.id, "succeeded");
      await new Promise((r) => setTimeout(r, 300));
      const deliveries = await deliveriesOf(partner, sub.id);
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({ eventId: event.id, status: "succeeded", payload: { id: 9 } });
      expect(receivedOn("/twice")).toHaveLength(1);
    });

    it("when an event happened before the subscription existed, then that subscription does not receive it", async () => {
      const occurredAt = new Date(Date.now() - 60_000).toISOString();
      const sub = (await subscribe(partner, "sales_order_cancelled", "/late")).result;
      await t.broker.sendToChannel(channelOf("sales_order_cancelled"), {
        id: `test-old-${++seq}`,
        event: "sales_order_cancelled",
        ownerClientId: partner.clientId,
        entity: "order",
        entityId: 1,
        occurredAt,
        data: {},
      });
      expect(await deliveriesOf(partner, sub.id)).toEqual([]);
    });

    it("when the receiver answers 500 then 200, then the delivery is retried and succeeds, with both attempts listed", async () => {
      const sub = (await subscribe(partner, "sales_order_created", "/flaky")).result;
      receiver.answerWith((r, before) => (r.path === "/flaky" && before === 0 ? 500 : 200));
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { flaky: ++seq } }]);
      await receiver.waitFor(() => receivedOn("/flaky").length === 2, EVENTUALLY_MS);
      const [first, second] = receivedOn("/flaky");
      expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"]);

      await waitForStatus(partner, sub.id, "succeeded");
      const [delivery] = await deliveriesOf(partner, sub.id);
      expect(delivery.attempts.map((a) => a.statusCode)).toEqual([500, 200]);
      expect(delivery.webhookId).toBe(first.headers["webhook-id"]);
    });

    it("when every attempt fails, then the delivery ends failed, and a redelivery by hand sends it again", async () => {
      const sub = (await subscribe(partner, "sales_order_created", "/down")).result;
      receiver.answerWith((r) => (r.path === "/down" ? 503 : 200));
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { down: ++seq } }]);
      await waitForStatus(partner, sub.id, "failed");
      let [delivery] = await deliveriesOf(partner, sub.id, { status: "failed" });
      expect(delivery.attempts.map((a) => a.statusCode)).toEqual([503, 503, 503]);
      expect(delivery.nextAttemptAt).toBeNull();

      receiver.answerWith(() => 200);
      const redelivered = await call<DeliveryJson>(
        "webhooks.redeliver",
        { id: sub.id, deliveryId: delivery.id },
        partner,
      );
      expect(redelivered.meta.$statusCode).toBe(202);
      expect(redelivered.result.status).toBe("pending");
      await waitForStatus(partner, sub.id, "succeeded");
      [delivery] = await deliveriesOf(partner, sub.id);
      expect(delivery.attempts.map((a) => a.statusCode)).toEqual([503, 503, 503, 200]);

      // A succeeded delivery can be sent again as well; another client cannot touch it.
      await call("webhooks.redeliver", { id: sub.id, deliveryId: delivery.id }, partner);
      await receiver.waitFor(() => receivedOn("/down").length === 5, EVENTUALLY_MS);
      await expect(
        call("webhooks.redeliver", { id: sub.id, deliveryId: delivery.id }, otherPartner),
      ).rejects.toMatchObject({ code: 404 });
      await expect(call("webhooks.redeliver", { id: sub.id, deliveryId: 99_999_999 }, partner)).rejects.toMatchObject({
        code: 404,
      });
    });

    it("when the receiver never answers, then the attempt times out and is retried", async () => {
      const sub = (await subscribe(partner, "sales_order_created", "/slow")).result;
      receiver.answerWith((r, before) => (r.path === "/slow" && before === 0 ? "hang" : 200));
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { slow: ++seq } }]);
      await waitForStatus(partner, sub.id, "succeeded");
      const [delivery] = await deliveriesOf(partner, sub.id);
      expect(delivery.attempts[0]).toMatchObject({
        statusCode: null,
        error: expect.stringContaining(`${ANSWER_WITHIN_MS} ms`),
      });
      expect(delivery.attempts[1]).toMatchObject({ statusCode: 200, error: null });
    });

    it("when a subscription is deleted, then its pending deliveries are gone and nothing more is sent", async () => {
      const sub = (await subscribe(partner, "sales_order_created", "/gone")).result;
      await call("webhooks.unsubscribe", { id: sub.id }, partner);
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { gone: ++seq } }]);
      await new Promise((r) => setTimeout(r, 400));
      expect(receivedOn("/gone")).toHaveLength(0);
      const left = await db
        .withSchema("webhooks")
        .table("deliveries")
        .where({ subscription_id: sub.id })
        .count({ n: "*" })
        .first();
      expect(Number((left as { n: unknown }).n)).toBe(0);
    });

    it("when a subscription whose deliveries were sent is deleted, then their attempts go with them", async () => {
      const sub = (await subscribe(partner, "sales_order_created", "/sent-then-gone")).result;
      await source.emit([{ event: "sales_order_created", ownerClientId: partner.clientId, data: { sent: ++seq } }]);
      await waitForStatus(partner, sub.id, "succeeded");
      const deliveryIds = (await deliveriesOf(partner, sub.id)).map((d) => d.id);
      const attemptsOf = async () =>
        Number(
          (
            (await db
              .withSchema("webhooks")
              .table("attempts")
              .whereIn("delivery_id", deliveryIds)
              .count({ n: "*" })
              .first()) as {
              n: unknown;
            }
          ).n,
        );
      expect(await attemptsOf()).toBe(1);
      await call("webhooks.unsubscribe", { id: sub.id }, partner);
      // No foreign key cascades to the attempts any more (migration 20261227000000): the delete does.
      expect(await attemptsOf()).toBe(0);
    });
  });

  async function waitForStatus(as: Principal, id: number, status: string): Promise<void> {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const deliveries = await deliveriesOf(as, id);
      if (deliveries.length > 0 && deliveries.every((d) => d.status === status)) return;
      if (Date.now() > deadline) throw new Error(`Deliveries never all ${status}: ${JSON.stringify(deliveries)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
});
