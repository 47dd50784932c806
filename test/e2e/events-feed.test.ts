/**
 * The events feed has no gaps (docs/architecture.md, "The events feed"): 8 writers create and
 * validate or cancel orders at once through two orders processes, while a reader pages through
 * GET /api/v1/events as fast as it can. An event that became visible behind the reader's cursor
 * would be missing from what it read; the set read must be the set written, each once, and each
 * page read again later must start with the same events. Also over HTTP: the grants are those of
 * the moment of reading (a webhook event taken away is out of the next page).
 */
import type { Order } from "../../services/orders/orders.representation";
import type { ApiClient } from "../helpers/http";
import { startClusterWorld, type Cluster } from "../helpers/cluster";
import { partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { EVENTUALLY_MS } from "../helpers/deadlines";

interface FeedEvent {
  webhookId: string;
  event: string;
  createdAt: string;
  body: { id: number; status: string };
}

interface ReadPage {
  after: string | null;
  limit: number;
  events: FeedEvent[];
}

const WRITERS = 8;
const ORDERS_PER_WRITER = 125;
const PAGE_LIMIT = 50;

let cluster: Cluster;
let admin: ApiClient;
let partner: ApiClient;
let backoffice: ApiClient;
let world: ApiWorld;

beforeAll(async () => {
  ({ cluster, admin, world, partner, backoffice } = await startClusterWorld({ replicas: { orders: 2 } }));
}, 180_000);
afterAll(() => cluster?.stop());

/** One page, without the contract check (the reader is to be as fast as it can); the Link's `after`. */
async function readPage(
  key: string,
  after: string | null,
  limit = PAGE_LIMIT,
): Promise<{ events: FeedEvent[]; next: string }> {
  const query = new URLSearchParams({ limit: String(limit), ...(after ? { after } : {}) });
  const res = await fetch(`${cluster.baseUrl}/api/v1/events?${query.toString()}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  if (res.status !== 200) throw new Error(`GET /api/v1/events answered ${res.status}: ${await res.text()}`);
  const next = /[?&]after=([A-Za-z0-9_-]+)/.exec(res.headers.get("link") ?? "")?.[1];
  if (!next) throw new Error(`no Link rel="next": ${res.headers.get("link")}`);
  return { events: (await res.json()) as FeedEvent[], next };
}

const key = (e: { event: string; body: { id: number } }) => `${e.event}:${e.body.id}`;

/** The answer, asked again while it is a 503 (the gateway's time-out on a machine loaded by other work). */
async function answered<T extends { status: number }>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const res = await call();
    if (res.status !== 503 || attempt === 5) return res;
  }
}

describe("when 8 writers change orders through two orders processes while a reader pages through the events feed", () => {
  it("then the reader reads every event written, each once, in an order that reading again does not change", async () => {
    const written = new Set<string>();
    let writing = true;

    const writer = async (w: number) => {
      for (let i = 0; i < ORDERS_PER_WRITER; i++) {
        // A repeat after a 503 (a busy machine) replays the first answer: one order either way.
        const created = await answered(() =>
          partner.post<Order>("/api/v1/orders", partnerOrderBody(world, { externalId: `feed-${w}-${i}` }), {
            "Idempotency-Key": `feed-${w}-${i}`,
          }),
        );
        expect(created.status).toBe(201);
        written.add(`sales_order_created:${created.body.id}`);
        const move = i % 2 === 0 ? "validate" : "cancel";
        // A repeat of a move that was made is a 409: made either way.
        const moved = await answered(() => backoffice.post<Order>(`/api/v1/orders/${created.body.id}/${move}`));
        expect([200, 409]).toContain(moved.status);
        written.add(`sales_order_${move === "validate" ? "validated" : "cancelled"}:${created.body.id}`);
      }
    };

    const pages: ReadPage[] = [];
    const read: FeedEvent[] = [];
    const reader = async () => {
      let after: string | null = null;
      let idleSince: number | null = null;
      for (;;) {
        const page = await readPage(world.backofficeKey, after);
        pages.push({ after, limit: PAGE_LIMIT, events: page.events });
        read.push(...page.events);
        after = page.next;
        if (page.events.length > 0 || writing) {
          idleSince = null;
          continue;
        }
        // Writers done: read on until everything written was seen (or nothing more comes for long).
        if (read.length >= written.size) return;
        idleSince ??= Date.now();
        if (Date.now() - idleSince > EVENTUALLY_MS) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    const reading = reader();
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    writing = false;
    await reading;

    // The set read is the set written, each event once.
    const readKeys = read.map(key);
    expect(readKeys.length).toBe(written.size);
    expect(new Set(readKeys)).toEqual(written);
    expect(new Set(read.map((e) => e.webhookId)).size).toBe(read.length);
    // An order's events come in the order they happened.
    const position = new Map(readKeys.map((k, i) => [k, i]));
    for (const e of read.filter((x) => x.event !== "sales_order_created"))
      expect(position.get(`sales_order_created:${e.body.id}`)!).toBeLessThan(position.get(key(e))!);
    // Each page read again gives the same events (more after them where the page was not full).
    const empty = pages.filter((p) => p.events.length === 0).length;
    for (const p of pages.filter((x) => x.events.length > 0)) {
      const again = await readPage(world.backofficeKey, p.after, p.limit);
      expect(again.events.slice(0, p.events.length).map((e) => e.webhookId)).toEqual(p.events.map((e) => e.webhookId));
      if (p.events.length === p.limit) expect(again.events.length).toBe(p.limit);
    }
    console.log(
      `[events feed] ${written.size} events by ${WRITERS} writers (${cluster.distributed ? "two orders processes" : "embedded"}); read in ${pages.length} pages, ${empty} of them empty`,
    );
  }, 600_000);
});

describe("when a client's webhook events are taken away over the API", () => {
  it("then its next read of the feed no longer holds them, before its cached key would notice", async () => {
    const before = await partner.get<FeedEvent[]>("/api/v1/events?event=sales_order_created&limit=1");
    expect(before.status).toBe(200);
    expect(before.body).toHaveLength(1);
    const patched = await admin.request({
      method: "PATCH",
      path: `/api/v1/clients/${world.partnerClientId}`,
      body: {
        webhookEvents: ["contact_reference_created"],
      },
    });
    expect(patched.status).toBe(200);
    const after = await readPage(world.partnerKey, null, 500);
    expect(after.events.filter((e) => e.event !== "contact_reference_created")).toEqual([]);
    const refused = await partner.get("/api/v1/events?event=sales_order_created");
    expect(refused.status).toBe(403);
  });
});
