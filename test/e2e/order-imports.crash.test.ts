/**
 * An import survives a crash (issue 24, part 2): the process that runs it is killed (SIGKILL)
 * mid-import and started again; the import completes with every line's order created exactly
 * once, lines without an externalId included (each line's result is written in its order's
 * transaction, and the resumed worker takes only the lines with no result). The distributed mode
 * kills the orders process; the embedded one, the only process.
 */
import type { ApiClient } from "../helpers/http";
import { startClusterWorld, type Cluster } from "../helpers/cluster";
import { partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import type { Order } from "../../services/orders/orders.representation";
import type { OrderImport } from "../../services/orders/orders.import-representation";
import { getOnceMore, importEnded, importResults, ndjson, pathOf, uploadImport } from "../helpers/order-imports";

const LINES = 3_000;

let cluster: Cluster;
let partner: ApiClient;
let world: ApiWorld;

beforeAll(async () => {
  ({ cluster, world, partner } = await startClusterWorld());
}, 180_000);
afterAll(() => cluster?.stop());

/** Every order of the partner created since `since` whose externalReference starts with `tag`. */
async function ordersTagged(since: string, tag: string): Promise<Order[]> {
  const found: Order[] = [];
  let next: string | null = `/api/v1/orders?createdSince=${encodeURIComponent(since)}&limit=100`;
  while (next) {
    const page: { status: number; headers: Record<string, string>; body: Order[] } = await getOnceMore<Order[]>(
      partner,
      next,
    );
    expect(page.status).toBe(200);
    found.push(...page.body.filter((o) => o.externalReference?.startsWith(tag)));
    const link: string | undefined = page.headers.link;
    next = link ? pathOf(/^<([^>]+)>; rel="next"$/.exec(link)![1]) : null;
  }
  return found;
}

describe("when the process running an import is killed mid-import and started again", () => {
  it("then the import completes, with no order created twice and none missing", async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const tag = `CRASH-${Date.now().toString(36)}`;
    // No externalId: nothing but the per-line result keeps a line from being taken twice.
    const lines = Array.from({ length: LINES }, (_, i) =>
      partnerOrderBody(world, { externalReference: `${tag}-${i}` }),
    );
    const upload = await uploadImport(partner, ndjson(lines));
    expect(upload.status).toBe(202);
    const location = pathOf(upload.headers.location);

    const running = cluster.distributed ? cluster.processes.get("orders")![0] : cluster.processes.get("gateway")![0];
    let seen: OrderImport;
    do {
      seen = (await getOnceMore<OrderImport>(partner, location)).body;
      await new Promise((r) => setTimeout(r, 20));
    } while (seen.processed < 50);
    expect(seen.processed).toBeLessThan(LINES);
    await running.kill("SIGKILL");
    await running.start();

    const ended = await importEnded(partner, location, 120_000);
    expect(ended).toMatchObject({ status: "completed", total: LINES, created: LINES, rejected: 0, duplicates: 0 });
    const results = await importResults(partner, location);
    expect(results.map((r) => r.index)).toEqual(lines.map((_, i) => i));
    expect(results.every((r) => r.status === 201)).toBe(true);

    const orders = await ordersTagged(since, tag);
    const references = orders.map((o) => o.externalReference).sort();
    expect(references).toEqual(lines.map((l) => l.externalReference).sort());
    expect(new Set(results.map((r) => (r.order as Order).id))).toEqual(new Set(orders.map((o) => o.id)));
  }, 240_000);
});
