/**
 * Authorization decided at the moment of use, in the embedded mode (one broker, no
 * transporter): changing a client (PATCH), revoking it, and what its webhooks receive
 * afterwards — through the real clients service, gateway and webhooks service, a real receiver.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { BROADCASTS } from "../../shared/messaging/events";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const ADMIN_KEY = "grants-admin-key-0123456789abcdef";
/** Bound the issue sets for a change to hold everywhere. */
const TWO_SECONDS = 2_000;

interface ClientJson {
  id: number;
  scopes: string[];
  webhookEvents: string[];
  apiKey: string;
}

describe("clients: changes and revocation hold at the moment of use", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  let base: string;
  const changes: unknown[] = [];
  let seq = 0;

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["gateway", "clients", "webhooks"],
      // A failed attempt waits 30 s: what is queued stays queued while the test looks at it.
      env: {
        ADMIN_API_KEY: ADMIN_KEY,
        WEBHOOK_RETRY_SCHEDULE: "30,30",
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    t.broker.createService({
      name: "changes-listener",
      events: {
        [BROADCASTS.clientsChanged.name](ctx: { params: unknown }) {
          changes.push(ctx.params);
        },
      },
    });
    source = await addEventSource(t.broker, "grants_it_source");
    receiver = await startReceiver((r) => (r.path.startsWith("/failing") ? 500 : 200));
    db = openDatabase(t.database.url);
    const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  const http = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function newClient(
    kind: string,
    extra: Record<string, unknown> = {},
  ): Promise<ClientJson & { principal: Principal }> {
    const res = await http(ADMIN_KEY, "POST", "/clients", { name: `${kind} ${Date.now()}-${seq++}`, kind, ...extra });
    expect(res.status).toBe(201);
    const client = (await res.json()) as ClientJson;
    return { ...client, principal: await t.call<Principal>("clients.authenticate", { key: client.apiKey }, null) };
  }

  const patch = (id: number, body: unknown) => http(ADMIN_KEY, "PATCH", `/clients/${id}`, body);

  async function subscribe(client: { principal: Principal }, event: string, path: string): Promise<number> {
    return (
      await t.call<{ id: number }>("webhooks.subscribe", { event, url: `${receiver.url}${path}` }, client.principal)
    ).id;
  }

  /** Raises events owned by `owner`; each body carries a fresh `seq` that names it. */
  async function raise(
    owner: { id: number },
    event: "sales_order_validated" | "sales_order_cancelled" = "sales_order_validated",
  ): Promise<number> {
    const mark = ++seq;
    await source.emit([{ event, ownerClientId: owner.id, entityId: mark, data: { seq: mark } }]);
    return mark;
  }

  const seqsOn = (path: string) =>
    receiver.received.filter((r) => r.path === path).map((r) => (JSON.parse(r.body) as { seq: number }).seq);
  const arrived = (path: string, mark: number) =>
    receiver.waitFor(
      () => seqsOn(path).includes(mark),
      15_000,
      () => `seq ${mark} not on ${path}`,
    );

  /** Every delivery of a subscription, with the `seq` of its event, read from the delivery log. */
  async function deliveryLog(subscriptionId: number): Promise<{ seq: number; status: string }[]> {
    const rows = await db
      .withSchema("webhooks")
      .table("deliveries as d")
      .join("events as e", "e.id", "d.event_id")
      .where("d.subscription_id", subscriptionId)
      .select<{ status: string; body: string }[]>("d.status", "e.body");
    return rows.map((r) => ({ seq: (JSON.parse(r.body) as { seq: number }).seq, status: r.status }));
  }

  async function waitForStatus(subscriptionId: number, mark: number, status: string): Promise<number> {
    const started = Date.now();
    for (;;) {
      const row = (await deliveryLog(subscriptionId)).find((d) => d.seq === mark);
      if (row?.status === status) return Date.now() - started;
      if (Date.now() - started > 15_000)
        throw new Error(`delivery of seq ${mark} is ${row?.status ?? "absent"}, not ${status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  describe("PATCH /clients/{id}", () => {
    it("when an admin changes scopes, events and name, then the client reads them back and `clients.changed` names it", async () => {
      const client = await newClient("partner");
      changes.length = 0;
      const res = await patch(client.id, {
        name: "Renamed",
        scopes: ["partner", "webhooks"],
        webhookEvents: ["sales_order_cancelled"],
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        id: client.id,
        name: "Renamed",
        scopes: ["partner", "webhooks"],
        webhookEvents: ["sales_order_cancelled"],
      });
      expect(changes).toEqual([{ clientId: client.id }]);
    });

    it("when the body is empty, names an unknown scope or event or an unknown field, then 422 names the field and nothing changes", async () => {
      const client = await newClient("partner");
      // Issue 20: the rule across fields names each field it involves, not the body ("").
      const empty = (await (await patch(client.id, {})).json()) as { errors: { path: string }[] };
      expect(empty.errors.map((e) => e.path)).toEqual(["name", "scopes", "webhookEvents"]);
      const cases: [unknown, string][] = [
        [{}, "scopes"],
        [{ scopes: ["orders:write", "root"] }, "scopes[1]"],
        [{ webhookEvents: ["order_shipped"] }, "webhookEvents[0]"],
        [{ kind: "admin" }, "kind"],
        [{ name: "" }, "name"],
      ];
      for (const [body, path] of cases) {
        const res = await patch(client.id, body);
        expect(res.status).toBe(422);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(((await res.json()) as { errors: { path: string }[] }).errors.map((e) => e.path)).toContain(path);
      }
      const after = (await (await http(ADMIN_KEY, "GET", `/clients/${client.id}`)).json()) as ClientJson;
      expect(after.scopes).toEqual(client.scopes);
    });

    it("when the client is unknown it is 404, when revoked 409, and a key without `admin` is 403", async () => {
      const client = await newClient("partner");
      expect((await patch(999_999, { name: "x" })).status).toBe(404);
      expect((await http(client.apiKey, "PATCH", `/clients/${client.id}`, { scopes: ["admin"] })).status).toBe(403);
      expect((await http(ADMIN_KEY, "DELETE", `/clients/${client.id}`)).status).toBe(200);
      expect((await patch(client.id, { name: "x" })).status).toBe(409);
    });
  });

  describe("the gateway", () => {
    it("when a scope is removed or the client revoked, then its key answers 403, then 401, at the next request", async () => {
      const client = await newClient("backoffice");
      expect((await http(client.apiKey, "GET", "/webhooks")).status).toBe(200);
      expect((await patch(client.id, { scopes: ["crm"] })).status).toBe(200);
      expect((await http(client.apiKey, "GET", "/webhooks")).status).toBe(403);
      expect((await http(ADMIN_KEY, "DELETE", `/clients/${client.id}`)).status).toBe(200);
      expect((await http(client.apiKey, "GET", "/webhooks")).status).toBe(401);
    });

    it("when the broadcast never comes (the row changed behind the service's back), then the key is refused within 2 s all the same", async () => {
      const client = await newClient("backoffice");
      expect((await http(client.apiKey, "GET", "/webhooks")).status).toBe(200);
      await db.withSchema("clients").table("clients").where({ id: client.id }).update({ revoked_at: db.fn.now() });
      const started = Date.now();
      let status = 200;
      while (status !== 401 && Date.now() - started < 2 * TWO_SECONDS) {
        status = (await http(client.apiKey, "GET", "/webhooks")).status;
        if (status !== 401) await new Promise((r) => setTimeout(r, 25));
      }
      const delay = Date.now() - started;
      console.log(`[grants] revoked without a broadcast: the gateway answered 401 after ${delay} ms`);
      expect(status).toBe(401);
      expect(delay).toBeLessThanOrEqual(TWO_SECONDS);
    });
  });

  describe("webhooks follow the current grants", () => {
    it("when a back office loses `orders:manage`, then it no longer hears other clients' orders but still hears its own", async () => {
      const partner = await newClient("partner");
      const backoffice = await newClient("backoffice");
      const partnerSub = await subscribe(partner, "sales_order_validated", "/lose-manage/partner");
      const backofficeSub = await subscribe(backoffice, "sales_order_validated", "/lose-manage/backoffice");

      const before = await raise(partner);
      await arrived("/lose-manage/backoffice", before);

      expect(
        (await patch(backoffice.id, { scopes: ["crm", "catalogue", "orders:write", "orders:read", "webhooks"] }))
          .status,
      ).toBe(200);
      const othersOrder = await raise(partner);
      const ownOrder = await raise(backoffice);
      await arrived("/lose-manage/partner", othersOrder);
      await arrived("/lose-manage/backoffice", ownOrder);

      // The partner's delivery proves the event was fanned out: the back office got no delivery of it.
      expect((await deliveryLog(backofficeSub)).map((d) => d.seq).sort((a, b) => a - b)).toEqual([before, ownOrder]);
      expect(seqsOn("/lose-manage/backoffice")).not.toContain(othersOrder);
      expect((await deliveryLog(partnerSub)).map((d) => d.seq).sort((a, b) => a - b)).toEqual([before, othersOrder]);
    });

    it("when a client is revoked, then nothing that happens afterwards is delivered to it, while others still hear it", async () => {
      const partner = await newClient("partner");
      const backoffice = await newClient("backoffice");
      const partnerSub = await subscribe(partner, "sales_order_validated", "/revoked/partner");
      await subscribe(backoffice, "sales_order_validated", "/revoked/backoffice");
      const before = await raise(partner);
      await arrived("/revoked/partner", before);

      expect((await http(ADMIN_KEY, "DELETE", `/clients/${partner.id}`)).status).toBe(200);
      const after = await raise(partner);
      await arrived("/revoked/backoffice", after);

      expect(seqsOn("/revoked/partner")).toEqual([before]);
      expect((await deliveryLog(partnerSub)).map((d) => d.seq)).toEqual([before]);
    });

    it("when a client is revoked, then its queued deliveries become `cancelled`, stay in the log and are never sent", async () => {
      const partner = await newClient("partner");
      const sub = await subscribe(partner, "sales_order_validated", "/failing/revoked");
      const mark = await raise(partner);
      await arrived("/failing/revoked", mark);
      await waitForStatus(sub, mark, "pending");

      expect((await http(ADMIN_KEY, "DELETE", `/clients/${partner.id}`)).status).toBe(200);
      const delay = await waitForStatus(sub, mark, "cancelled");
      console.log(`[grants] queued delivery cancelled ${delay} ms after the revocation answered`);

      // Due again now: the dispatcher still does not send it.
      await db
        .withSchema("webhooks")
        .table("deliveries")
        .where({ subscription_id: sub })
        .update({ next_attempt_at: db.fn.now() });
      const sentinel = await newClient("partner");
      await subscribe(sentinel, "sales_order_validated", "/revoked-sentinel");
      await arrived("/revoked-sentinel", await raise(sentinel));
      expect(seqsOn("/failing/revoked")).toEqual([mark]);
      expect(await deliveryLog(sub)).toEqual([{ seq: mark, status: "cancelled" }]);
    });

    it("when a client loses an event, then its queued deliveries of that event are cancelled and those of its other events kept", async () => {
      const partner = await newClient("partner");
      const validatedSub = await subscribe(partner, "sales_order_validated", "/failing/lost-event/validated");
      const cancelledSub = await subscribe(partner, "sales_order_cancelled", "/failing/lost-event/cancelled");
      const validated = await raise(partner, "sales_order_validated");
      const cancelled = await raise(partner, "sales_order_cancelled");
      await arrived("/failing/lost-event/validated", validated);
      await arrived("/failing/lost-event/cancelled", cancelled);
      await waitForStatus(validatedSub, validated, "pending");

      expect(
        (await patch(partner.id, { webhookEvents: ["sales_order_cancelled", "sales_order_created"] })).status,
      ).toBe(200);
      await waitForStatus(validatedSub, validated, "cancelled");
      expect(await deliveryLog(cancelledSub)).toEqual([{ seq: cancelled, status: "pending" }]);

      // And a new event of the lost kind makes no delivery at all.
      const later = await raise(partner, "sales_order_validated");
      const laterCancelled = await raise(partner, "sales_order_cancelled");
      await arrived("/failing/lost-event/cancelled", laterCancelled);
      expect((await deliveryLog(validatedSub)).map((d) => d.seq)).not.toContain(later);
    });

    it("when the revocation's broadcast is missed, then the dispatcher re-checks the grants before sending and cancels instead", async () => {
      const partner = await newClient("partner");
      const sub = await subscribe(partner, "sales_order_validated", "/failing/missed");
      const mark = await raise(partner);
      await arrived("/failing/missed", mark);
      await waitForStatus(sub, mark, "pending");

      // Revoked in the database only: no `clients.changed` reaches the webhooks service.
      await db.withSchema("clients").table("clients").where({ id: partner.id }).update({ revoked_at: db.fn.now() });
      await t.call(
        "webhooks.redeliver",
        {
          id: sub,
          deliveryId: (
            (await db.withSchema("webhooks").table("deliveries").where({ subscription_id: sub }).first()) as {
              id: number;
            }
          ).id,
        },
        partner.principal,
      );
      await waitForStatus(sub, mark, "cancelled");
      expect(seqsOn("/failing/missed")).toEqual([mark]);
    });
  });
});
