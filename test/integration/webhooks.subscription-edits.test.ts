/**
 * Issue 21, parts 5 and 6: a subscription is changed in place (PATCH: URL, description, custom
 * headers, rate limit) and keeps its history, its pending deliveries going to the new URL from
 * their next attempt; its owner disables it (the mirror of /enable); the event catalogue shows
 * each event's body schema and an example that validates. Real PostgreSQL, a real receiver.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { SecretBox } from "../../shared/security/secret-box";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface SubscriptionJson {
  id: number;
  url: string;
  status: string;
  disabledReason: string | null;
  description: string | null;
  headerNames: string[];
  rateLimit: number | null;
}
interface DeliveryJson {
  id: number;
  webhookId: string;
  status: string;
  attempts: { statusCode: number | null }[];
}
interface EventTypeJson {
  event: string;
  description: string;
  schema: Record<string, unknown>;
  example: unknown;
  version: number;
}

const newPartner = (webhookEvents: string[] = [...EVENTS]): Principal => ({
  ...principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]),
  webhookEvents,
});

describe("webhooks: changing a subscription, disabling it, the event catalogue", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  let seq = 0;

  const call = <T>(action: string, params: object, as: Principal) => t.call<T>(action, params, as);
  const subscribe = (as: Principal, path: string, event = "sales_order_created") =>
    call<SubscriptionJson>("webhooks.subscribe", { event, url: `${receiver.url}${path}` }, as);
  const emit = async (owner: Principal) => {
    seq += 1;
    await source.emit([{ event: "sales_order_created", ownerClientId: owner.clientId, data: { seq } }]);
    return seq;
  };
  const on = (path: string) => receiver.received.filter((r) => r.path === path);
  const deliveriesOf = async (as: Principal, id: number) =>
    (await call<{ items: DeliveryJson[] }>("webhooks.deliveries", { id }, as)).items;
  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const refusal = (work: Promise<unknown>) =>
    work.then(
      () => null,
      (err: { code?: number; data?: { errors?: { path: string }[]; id?: number } }) => ({
        code: err.code,
        paths: err.data?.errors?.map((e) => e.path) ?? [],
        id: err.data?.id,
      }),
    );

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_RETRY_SCHEDULE: "0.5,0.5,0.5,0.5,0.5,0.5",
        WEBHOOK_TIMEOUT_MS: "1000",
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_edits_source");
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await db?.destroy();
    await receiver?.close();
  });
  beforeEach(() => receiver.answerWith(() => 200));

  it("when the URL is changed while a delivery waits for its retry, then its next attempt goes to the new URL, and the subscription keeps its id and its log", async () => {
    const owner = newPartner();
    receiver.answerWith((r) => (r.path === "/old" ? 500 : 200));
    const sub = await subscribe(owner, "/old");
    const mine = await emit(owner);
    await receiver.waitFor(() => on("/old").length === 1, 10_000);

    const moved = await call<SubscriptionJson>("webhooks.update", { id: sub.id, url: `${receiver.url}/new` }, owner);
    expect(moved).toMatchObject({ id: sub.id, url: `${receiver.url}/new`, status: "active" });

    await receiver.waitFor(() => on("/new").length === 1, 10_000);
    expect(JSON.parse(on("/new")[0].body)).toEqual({ seq: mine });
    expect(on("/new")[0].headers["webhook-id"]).toBe(on("/old")[0].headers["webhook-id"]);
    const [delivery] = await until(
      "the delivery succeeding at the new URL",
      () => deliveriesOf(owner, sub.id),
      (items) => items[0]?.status === "succeeded",
    );
    expect(delivery.attempts.map((a) => a.statusCode)).toEqual([500, 200]);

    // A later event goes to the new URL only.
    const next = await emit(owner);
    await receiver.waitFor(() => on("/new").some((r) => (JSON.parse(r.body) as { seq: number }).seq === next), 10_000);
    expect(on("/old")).toHaveLength(1);
  });

  it("when the URL is one this client already has for the event, or refused, or nothing is given, then the change is refused and nothing changes", async () => {
    const owner = newPartner();
    const first = await subscribe(owner, "/taken");
    const second = await subscribe(owner, "/free");
    expect(await refusal(call("webhooks.update", { id: second.id, url: `${receiver.url}/taken` }, owner))).toEqual({
      code: 409,
      paths: [],
      id: first.id,
    });
    expect(await refusal(call("webhooks.update", { id: second.id, url: "ftp://example.com/x" }, owner))).toMatchObject({
      code: 422,
      paths: ["url"],
    });
    expect(await refusal(call("webhooks.update", { id: second.id }, owner))).toMatchObject({ code: 422, paths: [""] });
    expect(await refusal(call("webhooks.update", { id: second.id, rateLimit: 0 }, owner))).toMatchObject({
      code: 422,
    });
    expect(await refusal(call("webhooks.update", { id: second.id, description: "x" }, newPartner()))).toMatchObject({
      code: 404,
    });
    expect(await call<SubscriptionJson>("webhooks.get", { id: second.id }, owner)).toMatchObject({
      url: `${receiver.url}/free`,
      description: null,
      rateLimit: null,
    });
  });

  it("when custom headers are set, then every delivery carries them, their values are sealed at rest and never shown, and reserved names or an eleventh are refused", async () => {
    const owner = newPartner();
    const sub = await subscribe(owner, "/headers");
    const changed = await call<SubscriptionJson>(
      "webhooks.update",
      {
        id: sub.id,
        description: "ERP import",
        headers: { Authorization: "Bearer receiver-token-1", "X-Tenant": "acme" },
      },
      owner,
    );
    expect(changed).toMatchObject({ description: "ERP import", headerNames: ["Authorization", "X-Tenant"] });
    expect(JSON.stringify(changed)).not.toContain("receiver-token-1");
    const stored = (await db.withSchema("webhooks").table("subscriptions").where({ id: sub.id }).first()) as {
      headers: string;
    };
    expect(SecretBox.isSealed(stored.headers)).toBe(true);
    expect(stored.headers).not.toContain("receiver-token-1");

    const first = await emit(owner);
    await receiver.waitFor(
      () => on("/headers").some((r) => (JSON.parse(r.body) as { seq: number }).seq === first),
      10_000,
    );
    const received = on("/headers").find((r) => (JSON.parse(r.body) as { seq: number }).seq === first)!;
    expect(received.headers).toMatchObject({ authorization: "Bearer receiver-token-1", "x-tenant": "acme" });
    expect(received.headers["x-webhook-key"]).toMatch(/^whk_/);

    // A change touches only what it names: the token is replaced whatever its case, X-Tenant removed.
    const again = await call<SubscriptionJson>(
      "webhooks.update",
      { id: sub.id, headers: { authorization: "Bearer receiver-token-2", "X-Tenant": null } },
      owner,
    );
    expect(again.headerNames).toEqual(["authorization"]);
    const second = await emit(owner);
    await receiver.waitFor(
      () => on("/headers").some((r) => (JSON.parse(r.body) as { seq: number }).seq === second),
      10_000,
    );
    const later = on("/headers").find((r) => (JSON.parse(r.body) as { seq: number }).seq === second)!;
    expect(later.headers.authorization).toBe("Bearer receiver-token-2");
    expect(later.headers["x-tenant"]).toBeUndefined();

    for (const name of ["webhook-signature", "X-WEBHOOK-KEY", "Content-Type", "Transfer-Encoding", "Host"]) {
      expect({
        name,
        refused: await refusal(call("webhooks.update", { id: sub.id, headers: { [name]: "x" } }, owner)),
      }).toEqual({ name, refused: { code: 422, paths: [`headers.${name}`], id: undefined } });
    }
    const eleven = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`X-Extra-${i}`, "1"]));
    expect(await refusal(call("webhooks.update", { id: sub.id, headers: eleven }, owner))).toMatchObject({
      code: 422,
      paths: ["headers"],
    });
    expect((await call<SubscriptionJson>("webhooks.get", { id: sub.id }, owner)).headerNames).toEqual([
      "authorization",
    ]);
  });

  it("when its owner disables a subscription, then nothing more is sent to it, its other subscriptions hear webhook_endpoint_disabled, and /enable brings it back", async () => {
    const owner = newPartner();
    const sub = await subscribe(owner, "/paused");
    await subscribe(owner, "/told-paused", "webhook_endpoint_disabled");
    // Hears every event of the owner: once it has one, that event's fan-out is over.
    await subscribe(owner, "/witness");

    const disabled = await call<SubscriptionJson>("webhooks.disable", { id: sub.id }, owner);
    expect(disabled).toMatchObject({ id: sub.id, status: "disabled", disabledReason: expect.stringMatching(/owner/) });
    expect(await call<SubscriptionJson>("webhooks.disable", { id: sub.id }, owner)).toMatchObject({
      status: "disabled",
    });
    await receiver.waitFor(() => on("/told-paused").length === 1, 10_000);
    expect(JSON.parse(on("/told-paused")[0].body)).toMatchObject({ id: sub.id, status: "disabled" });

    const whileDisabled = await emit(owner);
    await receiver.waitFor(
      () => on("/witness").some((r) => (JSON.parse(r.body) as { seq: number }).seq === whileDisabled),
      10_000,
    );
    const enabled = await call<SubscriptionJson>("webhooks.enable", { id: sub.id }, owner);
    expect(enabled).toMatchObject({ status: "active", disabledReason: null });
    const afterwards = await emit(owner);
    await receiver.waitFor(
      () => on("/paused").some((r) => (JSON.parse(r.body) as { seq: number }).seq === afterwards),
      10_000,
    );
    expect(on("/paused").map((r) => (JSON.parse(r.body) as { seq: number }).seq)).not.toContain(whileDisabled);
    expect(await refusal(call("webhooks.disable", { id: sub.id }, newPartner()))).toMatchObject({ code: 404 });
  });

  it("when the catalogue is asked for, then it lists the events this client may subscribe to, each with a schema its example validates against", async () => {
    const some = newPartner(["sales_order_validated", "webhook_endpoint_disabled"]);
    const types = await call<EventTypeJson[]>("webhooks.eventTypes", {}, some);
    expect(types.map((e) => [e.event, e.version])).toEqual([
      ["sales_order_validated", 1],
      ["webhook_endpoint_disabled", 1],
    ]);
    const ajv = new Ajv2020({ strict: true });
    addFormats(ajv);
    for (const { event, schema, example } of types) {
      const validate = ajv.compile(schema);
      expect({ event, valid: validate(example), errors: validate.errors ?? null }).toEqual({
        event,
        valid: true,
        errors: null,
      });
    }
    expect(await call<EventTypeJson[]>("webhooks.eventTypes", {}, newPartner([]))).toEqual([]);
  });
});
