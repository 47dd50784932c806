/**
 * Looking orders up over HTTP (issue 24, part 3): the query as the gateway hands it on, and the
 * Link header's cursor of a page in a time order, followed as a partner's sync would.
 */
import type { Order } from "../../services/orders/orders.representation";
import type { ApiClient } from "../helpers/http";
import { startClusterWorld, type Cluster } from "../helpers/cluster";
import { partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";

let cluster: Cluster;
let partner: ApiClient;
let otherPartner: ApiClient;
let world: ApiWorld;

beforeAll(async () => {
  ({ cluster, world, partner, otherPartner } = await startClusterWorld());
}, 180_000);
afterAll(() => cluster?.stop());

/** Every order the pages hold, following `Link: rel="next"` from `first`. */
async function followLinks(client: ApiClient, first: string): Promise<number[]> {
  const seen: number[] = [];
  let next: string | null = first;
  while (next) {
    const page: { status: number; headers: Record<string, string>; body: Order[] } = await client.get<Order[]>(next);
    expect(page.status).toBe(200);
    seen.push(...page.body.map((o) => o.id));
    const link: string | undefined = page.headers.link;
    next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : null;
  }
  return seen;
}

describe("when a partner syncs over HTTP", () => {
  it("then its orders are found by externalId, and pages of a time range follow Link once each, in both orders", async () => {
    const tag = `SYNC-${Date.now().toString(36)}`;
    const since = new Date(Date.now() - 1000).toISOString();
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await partner.post<Order>(
        "/api/v1/orders",
        partnerOrderBody(world, { externalId: `${tag}-${i}`, externalReference: tag }),
      );
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    const found = await partner.get<Order[]>(`/api/v1/orders?externalId=${tag}-3`);
    expect([found.status, found.body.map((o) => o.id)]).toEqual([200, [ids[3]]]);
    const query = `externalReference=${tag}&updatedSince=${encodeURIComponent(since)}&limit=2`;
    expect(await followLinks(partner, `/api/v1/orders?${query}`)).toEqual(ids);
    expect(await followLinks(partner, `/api/v1/orders?${query}&order=desc`)).toEqual([...ids].reverse());
    expect(await followLinks(otherPartner, `/api/v1/orders?${query}`)).toEqual([]);
  });

  it("then an instant that is not ISO 8601 is a 422 naming the parameter", async () => {
    const refused = await partner.get<{ errors: { path: string }[] }>("/api/v1/orders?createdSince=2026-02-30");
    expect([refused.status, refused.body.errors.map((e) => e.path)]).toEqual([422, ["createdSince"]]);
  });
});
