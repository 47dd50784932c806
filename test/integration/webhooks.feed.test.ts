/**
 * The events feed (GET /api/v1/events, `webhooks.feed`): the events a client may receive by its
 * grants at read time, oldest first, each with the webhook-id and the very body its webhooks
 * carry, paged by an opaque `after` that never skips anything. The no-gap proof under concurrent
 * writers is the end-to-end test (test/e2e/events-feed.test.ts).
 */
import type { Page } from "../../shared/http/paging";
import { EVENTS } from "../../shared/messaging/events";
import type { Principal } from "../../shared/security/auth";
import type { FeedEvent } from "../../services/webhooks/webhooks.feed";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { createFixtures, partnerOrder, type Fixtures } from "../helpers/fixtures";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

describe("the events feed", () => {
  let t: TestBroker;
  let f: Fixtures;
  let receiver: WebhookReceiver;
  let partner: Principal;
  let backoffice: Principal;
  let otherPartner: Principal;
  const orderIds: number[] = [];

  const all = (p: Principal): Principal => ({ ...p, webhookEvents: [...EVENTS] });
  const page = (as: Principal, params: Record<string, unknown> = {}) =>
    t.call<Page<FeedEvent>>("webhooks.feed", params, as);

  /** Every event the client may read now, following the cursor until an empty page. */
  async function readAll(as: Principal, params: Record<string, unknown> = {}): Promise<FeedEvent[]> {
    const events: FeedEvent[] = [];
    let after: string | undefined;
    for (;;) {
      const p = await page(as, { ...params, ...(after ? { after } : {}) });
      events.push(...p.items);
      if (p.items.length === 0) return events;
      after = p.nextCursor!;
    }
  }
  const aboutOrder = (id: number) => (e: FeedEvent) =>
    e.event.startsWith("sales_order_") && (e.body as { id: number }).id === id;

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["crm", "catalogue", "references", "orders", "webhooks"],
      env: { WEBHOOK_DISPATCH_INTERVAL_MS: "50", OUTBOX_RELAY_INTERVAL_MS: "50" },
    });
    f = await createFixtures(t);
    partner = all(f.partner);
    backoffice = all(f.backoffice);
    otherPartner = all(f.otherPartner);
    receiver = await startReceiver();
    await t.call("webhooks.subscribe", { event: "sales_order_created", url: `${receiver.url}/partner` }, partner);
    await t.call("webhooks.subscribe", { event: "sales_order_created", url: `${receiver.url}/office` }, backoffice);
    for (let i = 0; i < 3; i++) {
      const order = await t.call<{ id: number }>(
        "orders.create",
        partnerOrder(f, { externalId: `feed-${i}` }),
        partner,
      );
      orderIds.push(order.id);
    }
    await t.call("orders.validate", { id: orderIds[0] }, backoffice);
    // Visible once every transaction older than theirs has ended, anywhere on the server (other
    // test files' included): from then on, what the tests read below is final.
    const deadline = Date.now() + EVENTUALLY_MS;
    while ((await readAll(partner)).filter((e) => e.event.startsWith("sales_order_")).length < 4) {
      if (Date.now() > deadline) throw new Error("the orders' events did not become visible in the feed");
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("when a partner's orders are created and one validated, then its feed lists their events oldest first, each with the webhook-id and the body byte for byte of its webhooks", async () => {
    await receiver.waitFor((r) => r.length >= 2 * orderIds.length, EVENTUALLY_MS);
    const events = await readAll(partner);
    const orderEvents = events.filter((e) => e.event.startsWith("sales_order_"));
    expect(orderEvents.map((e) => [e.event, (e.body as { id: number }).id])).toEqual([
      ...orderIds.map((id) => ["sales_order_created", id]),
      ["sales_order_validated", orderIds[0]],
    ]);
    // The contact references the fixtures made are the partner's events too.
    expect(events.filter((e) => e.event === "contact_reference_created").length).toBeGreaterThan(0);

    for (const path of ["/partner", "/office"]) {
      for (const received of receiver.received.filter((r) => r.path === path)) {
        const same = orderEvents.find((e) => e.webhookId === received.headers["webhook-id"]);
        expect(same).toBeDefined();
        expect(JSON.stringify(same!.body)).toBe(received.body);
        expect(same!.event).toBe(received.headers["x-webhook-event"]);
      }
    }
    // One webhook-id per event: the partner's and the back office's deliveries of one event share it.
    const ids = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => r.headers["webhook-id"]);
    expect(new Set(ids("/partner"))).toEqual(new Set(ids("/office")));
  });

  it("when another partner reads the feed, then it sees none of the partner's events; the back office sees its order events", async () => {
    const others = await readAll(otherPartner);
    expect(others.filter((e) => orderIds.some((id) => aboutOrder(id)(e)))).toEqual([]);
    const office = await readAll(backoffice);
    for (const id of orderIds) expect(office.filter(aboutOrder(id)).length).toBeGreaterThan(0);
    // Not the partner's contact references: the back office hears every client's order events only.
    const mine = await readAll(partner);
    const partnerReferences = mine.filter((e) => e.event === "contact_reference_created").map((e) => e.webhookId);
    expect(office.filter((e) => partnerReferences.includes(e.webhookId))).toEqual([]);
  });

  it("when the feed is read a page at a time, then the pages follow each other with nothing skipped or repeated, and a page read again is the same", async () => {
    const whole = await readAll(partner);
    const pages: FeedEvent[][] = [];
    const cursors: (string | undefined)[] = [undefined];
    for (;;) {
      const after = cursors.at(-1);
      const p = await page(partner, { limit: 2, ...(after ? { after } : {}) });
      if (p.items.length === 0) break;
      expect(p.items.length).toBeLessThanOrEqual(2);
      pages.push(p.items);
      cursors.push(p.nextCursor!);
    }
    expect(pages.flat()).toEqual(whole);
    for (const [i, items] of pages.entries()) {
      const again = await page(partner, { limit: 2, ...(cursors[i] ? { after: cursors[i] } : {}) });
      expect(again.items).toEqual(items);
    }
  });

  it("when the feed is filtered by event, then only that event is listed", async () => {
    const validated = await readAll(partner, { event: "sales_order_validated" });
    expect(validated.map((e) => [e.event, (e.body as { id: number }).id])).toEqual([
      ["sales_order_validated", orderIds[0]],
    ]);
  });

  it("when the partner loses a grant, then the next read no longer holds those events; an event filter it may not use is refused", async () => {
    const narrowed: Principal = { ...partner, webhookEvents: ["contact_reference_created"] };
    const events = await readAll(narrowed);
    expect(events.length).toBeGreaterThan(0);
    expect(events.filter((e) => e.event !== "contact_reference_created")).toEqual([]);
    await expect(page(narrowed, { event: "sales_order_created" })).rejects.toMatchObject({
      code: 403,
      data: { event: "sales_order_created" },
    });
    const withoutWebhooks: Principal = { ...partner, scopes: partner.scopes.filter((s) => s !== "webhooks") };
    await expect(page(withoutWebhooks)).rejects.toMatchObject({ code: 403 });
  });

  it("when the cursor is not one the API gave, then the read is refused naming `after`", async () => {
    const first = await page(partner, { limit: 1 });
    const forged = [
      "nope",
      Buffer.from("ev:1.nobody.1").toString("base64url"),
      Buffer.from("id:5").toString("base64url"),
    ];
    for (const after of forged) {
      await expect(page(partner, { after })).rejects.toMatchObject({
        code: 422,
        data: expect.arrayContaining([expect.objectContaining({ field: "after" })]) as unknown,
      });
    }
    // The last position of an empty page is where the next read starts: nothing is skipped.
    const end = await page(partner, { after: first.nextCursor, limit: 500 });
    const tail = await page(partner, { after: end.nextCursor });
    expect(tail.items).toEqual([]);
    expect(tail.nextCursor).toBe(end.nextCursor);
  });
});
