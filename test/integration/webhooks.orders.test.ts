/**
 * The whole path of the order and reference events, in one broker: a change and its outbox row
 * commit together, the relay publishes, webhooks fans out and sends. The body must be the JSON
 * of GET /api/v1/orders/{id} (and of the contact reference) at the time of the event.
 */
import { Webhook } from "standardwebhooks";
import type { Principal } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { createFixtures, partnerOrder, type Fixtures } from "../helpers/fixtures";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

describe("webhooks of orders and contact references", () => {
  let t: TestBroker;
  let f: Fixtures;
  let receiver: WebhookReceiver;
  let partner: Principal;
  let backoffice: Principal;
  let otherPartner: Principal;

  const subscribe = (as: Principal, event: string, path: string) =>
    t.call<{ id: number; secret: string }>("webhooks.subscribe", { event, url: `${receiver.url}${path}` }, as);
  const on = (path: string) => receiver.received.filter((r) => r.path === path);

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["crm", "catalogue", "references", "orders", "webhooks"],
      env: { WEBHOOK_DISPATCH_INTERVAL_MS: "50", OUTBOX_RELAY_INTERVAL_MS: "50" },
    });
    f = await createFixtures(t);
    const all = (p: Principal): Principal => ({ ...p, webhookEvents: [...EVENTS] });
    partner = all(f.partner);
    backoffice = all(f.backoffice);
    otherPartner = all(f.otherPartner);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("when a partner's order is created and validated, then the partner and the back office receive the order as GET shows it; the other partner nothing", async () => {
    const created = await subscribe(partner, "sales_order_created", "/partner/created");
    const validated = await subscribe(partner, "sales_order_validated", "/partner/validated");
    await subscribe(backoffice, "sales_order_validated", "/office/validated");
    await subscribe(otherPartner, "sales_order_validated", "/other/validated");

    const order = await t.call<{ id: number; code: string }>(
      "orders.create",
      partnerOrder(f, { externalReference: "PO-WEBHOOK" }),
      partner,
    );
    const afterCreate = await t.call<object>("orders.get", { id: order.id }, partner);
    await t.call("orders.validate", { id: order.id }, backoffice);
    const afterValidate = await t.call<{ code: string }>("orders.get", { id: order.id }, partner);

    await receiver.waitFor(
      () =>
        on("/partner/created").length === 1 &&
        on("/partner/validated").length === 1 &&
        on("/office/validated").length === 1,
      15_000,
    );
    const bodyOf = (path: string) => JSON.parse(on(path)[0].body) as unknown;
    expect(bodyOf("/partner/created")).toEqual(afterCreate);
    expect(bodyOf("/partner/validated")).toEqual(afterValidate);
    expect(bodyOf("/office/validated")).toEqual(afterValidate);
    expect(afterValidate.code).toMatch(/^ORD-\d{8}-\d+$/);
    expect(
      new Webhook(validated.secret).verify(on("/partner/validated")[0].body, on("/partner/validated")[0].headers),
    ).toMatchObject({ code: afterValidate.code });
    expect(
      new Webhook(created.secret).verify(on("/partner/created")[0].body, on("/partner/created")[0].headers),
    ).toMatchObject({ id: order.id });

    await new Promise((r) => setTimeout(r, 300));
    expect(on("/other/validated")).toHaveLength(0);
  });

  it("when a partner creates a contact reference, then its contact_reference_created subscription receives the reference", async () => {
    await subscribe(partner, "contact_reference_created", "/partner/reference");
    const body = {
      contact: {
        externalReference: `WH-${Date.now()}`,
        firstName: "Katherine",
        lastName: "Johnson",
        email: `kj-${Date.now()}@nasa.test`,
      },
      customer: { name: "NASA" },
    };
    const reference = await t.call<{ id: number }>("references.createContactReference", body, partner);
    await receiver.waitFor(() => on("/partner/reference").length === 1, 15_000);
    expect(JSON.parse(on("/partner/reference")[0].body)).toEqual(
      await t.call("references.getContactReference", { id: reference.id }, partner),
    );
  });
});
