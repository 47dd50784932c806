/**
 * Issue 21, part 1: a subscription's deliveries, and all of a client's, searched by time window,
 * event, status and webhook-id, oldest or newest first, a page at a time: every page of a walk
 * is exact in both orders (ties on createdAt broken by id), and another client's deliveries are
 * never found. The deliveries are written directly, with the times the test needs.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";

interface DeliveryJson {
  id: number;
  webhookId: string;
  event: string;
  status: string;
  createdAt: string;
}
interface Page {
  items: DeliveryJson[];
  nextCursor: string | null;
}

const BASE = Date.parse("2026-03-01T10:00:00Z");
const at = (minutes: number) => new Date(BASE + minutes * 60_000).toISOString();

describe("webhooks: delivery search", () => {
  let tb: TestBroker;
  let db: Knex;
  const owner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  const other: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  let mine: { id: number };
  let second: { id: number };
  let theirs: { id: number };
  /** Every delivery written, as [id, subscription, event, status, createdAt, webhookId]. */
  const written: { id: number; sub: number; event: string; status: string; at: string; webhookId: string }[] = [];

  const search = (params: object, as: Principal = owner) => tb.call<Page>("webhooks.searchDeliveries", params, as);
  const ofSubscription = (id: number, params: object = {}, as: Principal = owner) =>
    tb.call<Page>("webhooks.deliveries", { id, ...params }, as);

  /** Every page of a search, following the cursor. */
  async function walk(read: (cursor?: string) => Promise<Page>): Promise<number[]> {
    const ids: number[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const page = await read(cursor);
      ids.push(...page.items.map((d) => d.id));
      if (!page.nextCursor) return ids;
      cursor = page.nextCursor;
    }
    throw new Error("the walk never ended");
  }

  async function deliver(sub: number, event: string, status: string, createdAt: string): Promise<void> {
    const eventId = event === "webhook_test" ? `webhook_test-${crypto.randomUUID()}` : `src-${written.length}`;
    await db
      .withSchema("webhooks")
      .table("events")
      .insert({
        id: eventId,
        event,
        owner_client_id: owner.clientId,
        entity: "order",
        entity_id: 1,
        occurred_at: createdAt,
        body: JSON.stringify({ n: written.length }),
      });
    const webhookId = `msg_search${String(written.length).padStart(4, "0")}`;
    const [row] = await db
      .withSchema("webhooks")
      .table("deliveries")
      .insert({
        subscription_id: sub,
        event_id: eventId,
        webhook_id: webhookId,
        status,
        next_attempt_at: status === "pending" ? "2100-01-01T00:00:00Z" : null,
        created_at: createdAt,
      })
      .returning<{ id: number }[]>("id");
    written.push({ id: row.id, sub, event, status, at: createdAt, webhookId });
  }

  /** The ids of `written` that `keep` selects, oldest first (createdAt, then id). */
  const expected = (keep: (d: (typeof written)[number]) => boolean) =>
    written
      .filter(keep)
      .sort((a, b) => a.at.localeCompare(b.at) || a.id - b.id)
      .map((d) => d.id);

  beforeAll(async () => {
    // No dispatcher work: the deliveries written here are never due.
    tb = await startTestBroker({ services: ["webhooks"], env: { WEBHOOK_DISPATCH_INTERVAL_MS: "60000" } });
    db = openDatabase(tb.database.url);
    const subscribe = (as: Principal, event: string, path: string) =>
      tb.call<{ id: number }>("webhooks.subscribe", { event, url: `http://127.0.0.1:9/${path}` }, as);
    mine = await subscribe(owner, "sales_order_created", "mine");
    second = await subscribe(owner, "sales_order_validated", "second");
    theirs = await subscribe(other, "sales_order_created", "theirs");
    // Out of order on purpose, with ties on createdAt: the order is (createdAt, id), not insertion.
    await deliver(mine.id, "sales_order_created", "succeeded", at(5));
    await deliver(mine.id, "sales_order_created", "failed", at(1));
    await deliver(mine.id, "webhook_test", "succeeded", at(3));
    await deliver(mine.id, "sales_order_created", "succeeded", at(3));
    await deliver(mine.id, "sales_order_created", "cancelled", at(3));
    await deliver(second.id, "sales_order_validated", "failed", at(2));
    await deliver(second.id, "webhook_test", "pending", at(4));
    await deliver(mine.id, "sales_order_created", "failed", at(6));
    await deliver(theirs.id, "sales_order_created", "failed", at(2));
  });
  afterAll(async () => {
    await tb?.stop();
  });

  it("when a subscription's deliveries are walked a page at a time, then both orders list each one once, by createdAt then id", async () => {
    const all = expected((d) => d.sub === mine.id);
    expect(await walk((cursor) => ofSubscription(mine.id, { limit: 2, cursor }))).toEqual(all);
    expect(await walk((cursor) => ofSubscription(mine.id, { limit: 2, cursor, order: "desc" }))).toEqual(
      [...all].reverse(),
    );
    const failed = expected((d) => d.sub === mine.id && d.status === "failed");
    expect(
      await walk((cursor) => ofSubscription(mine.id, { limit: 1, cursor, status: "failed", order: "desc" })),
    ).toEqual([...failed].reverse());
  });

  it("when a window, an event or a webhook-id is asked, then only those deliveries are listed, combined with the rest", async () => {
    const inWindow = expected((d) => d.sub === mine.id && d.at >= at(3) && d.at < at(6));
    expect(await walk((cursor) => ofSubscription(mine.id, { since: at(3), until: at(6), limit: 2, cursor }))).toEqual(
      inWindow,
    );
    const tests = expected((d) => d.sub === mine.id && d.event === "webhook_test");
    expect((await ofSubscription(mine.id, { event: "webhook_test" })).items.map((d) => d.id)).toEqual(tests);
    const own = expected((d) => d.sub === mine.id && d.event === "sales_order_created" && d.at >= at(3));
    expect(
      (await ofSubscription(mine.id, { event: "sales_order_created", since: at(3) })).items.map((d) => d.id),
    ).toEqual(own);
    expect((await ofSubscription(mine.id, { event: "sales_order_validated" })).items).toEqual([]);
    const one = written.find((d) => d.sub === mine.id && d.status === "cancelled")!;
    expect((await ofSubscription(mine.id, { webhookId: one.webhookId })).items.map((d) => d.id)).toEqual([one.id]);
  });

  it("when all of a client's deliveries are searched, then every subscription of its own is merged in order, never another client's", async () => {
    const everything = expected((d) => d.sub !== theirs.id);
    expect(await walk((cursor) => search({ limit: 3, cursor }))).toEqual(everything);
    expect(await walk((cursor) => search({ limit: 3, cursor, order: "desc" }))).toEqual([...everything].reverse());
    const tests = expected((d) => d.sub !== theirs.id && d.event === "webhook_test");
    expect((await search({ event: "webhook_test", order: "desc" })).items.map((d) => d.id)).toEqual(
      [...tests].reverse(),
    );
    const validated = expected((d) => d.event === "sales_order_validated");
    expect((await search({ event: "sales_order_validated" })).items.map((d) => d.id)).toEqual(validated);

    const foreign = written.find((d) => d.sub === theirs.id)!;
    expect((await search({ webhookId: foreign.webhookId })).items).toEqual([]);
    expect((await search({ webhookId: foreign.webhookId }, other)).items.map((d) => d.id)).toEqual([foreign.id]);
    // A cursor naming another client's delivery is no cursor of this client's.
    const theirCursor = (await search({ limit: 1 }, other)).items[0].id;
    await expect(search({ cursor: Buffer.from(`id:${theirCursor}`).toString("base64url") })).rejects.toMatchObject({
      code: 422,
      data: { errors: [{ path: "cursor" }] },
    });
  });

  it("when a search is malformed, then 422 names the parameter; another client's subscription is 404", async () => {
    await expect(ofSubscription(mine.id, { order: "newest" })).rejects.toMatchObject({
      code: 422,
      data: [{ field: "order" }],
    });
    await expect(ofSubscription(mine.id, { since: "2026-02-30T00:00:00Z" })).rejects.toMatchObject({
      code: 422,
      data: [{ field: "since" }],
    });
    await expect(search({ since: at(5), until: at(5) })).rejects.toMatchObject({
      code: 422,
      data: { errors: [{ path: "until" }] },
    });
    await expect(search({ event: "no_such_event" })).rejects.toMatchObject({ code: 422, data: [{ field: "event" }] });
    await expect(ofSubscription(theirs.id)).rejects.toMatchObject({ code: 404 });
  });
});
