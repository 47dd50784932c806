/**
 * Background imports over HTTP (issue 24, part 2), in the mode the environment gives (the
 * distributed one with TEST_NATS_URL and PostgreSQL, the embedded one without): the NDJSON
 * upload streams through the gateway to the orders service, the import runs in the background,
 * its results stream back, and the owner is told when it ended.
 */
import type { ApiClient } from "../helpers/http";
import { startClusterWorld, type Cluster } from "../helpers/cluster";
import { partnerOrderBody, type ApiWorld } from "../helpers/api-fixtures";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { importEnded, importResults, ndjson, pathOf, uploadImport } from "../helpers/order-imports";

/** Small, so the 413 is tested without 100,000 real lines. */
const MAX_LINES = 20;

let cluster: Cluster;
let partner: ApiClient;
let otherPartner: ApiClient;
let world: ApiWorld;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ({ cluster, world, partner, otherPartner } = await startClusterWorld({
    env: { ORDER_IMPORT_MAX_LINES: String(MAX_LINES) },
  }));
  receiver = await startReceiver();
}, 180_000);
afterAll(async () => {
  await receiver?.close();
  await cluster?.stop();
});

describe("when a partner imports orders as NDJSON", () => {
  it("then it is answered 202 with Location, the import completes with one result per line, and the owner is told", async () => {
    const subscribed = await partner.put("/api/v1/webhooks", { event: "order_import_completed", url: receiver.url });
    expect(subscribed.status).toBe(201);
    const tag = `IMP-${Date.now().toString(36)}`;
    const body = ndjson([
      partnerOrderBody(world, { externalId: `${tag}-0` }),
      partnerOrderBody(world, { externalId: `${tag}-0` }),
      partnerOrderBody(world, { items: [] }),
      "{ not json",
      "",
      partnerOrderBody(world),
    ]);
    const upload = await uploadImport(partner, body);
    expect(upload.status).toBe(202);
    expect(upload.body).toMatchObject({ total: 5, status: "queued" });
    const location = pathOf(upload.headers.location);
    expect(location).toBe(`/api/v1/order_imports/${upload.body.id}`);

    const ended = await importEnded(partner, location);
    expect(ended).toMatchObject({
      status: "completed",
      total: 5,
      processed: 5,
      created: 2,
      duplicates: 1,
      rejected: 2,
    });
    expect(ended.startedAt).not.toBeNull();
    expect(ended.finishedAt).not.toBeNull();

    const results = await importResults(partner, location);
    expect(results.map((r) => [r.index, r.status])).toEqual([
      [0, 201],
      [1, 409],
      [2, 422],
      [3, 400],
      [4, 201],
    ]);
    expect(results[0].order).toMatchObject({ externalId: `${tag}-0` });
    expect(results[1].problem).toMatchObject({ status: 409, duplicateOfIndex: 0 });
    expect((results[2].problem as { errors: { path: string }[] }).errors.map((e) => e.path)).toEqual(["items"]);

    await receiver.waitFor(
      (received) => received.some((w) => w.headers["x-webhook-event"] === "order_import_completed"),
      EVENTUALLY_MS,
    );
    const told = receiver.received.find((w) => w.headers["x-webhook-event"] === "order_import_completed")!;
    expect(JSON.parse(String(told.body))).toMatchObject({ id: upload.body.id, status: "completed", created: 2 });
  });

  it("then another client is told the import does not exist", async () => {
    const upload = await uploadImport(partner, ndjson([partnerOrderBody(world)]));
    expect(upload.status).toBe(202);
    const location = pathOf(upload.headers.location);
    expect((await otherPartner.get(location)).status).toBe(404);
    expect((await otherPartner.get(`${location}/results`)).status).toBe(404);
    await importEnded(partner, location);
  });

  it("then more lines than the limit is a 413 naming it, and nothing is kept", async () => {
    const lines = Array.from({ length: MAX_LINES + 1 }, () => partnerOrderBody(world));
    const refused = await uploadImport(partner, ndjson(lines));
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ limitLines: MAX_LINES });
  });

  it("then a body that is not NDJSON is a 415, and an empty one a 422", async () => {
    const asJson = await partner.request({
      method: "POST",
      path: "/api/v1/order_imports",
      rawBody: JSON.stringify(partnerOrderBody(world)),
      headers: { "Content-Type": "application/json" },
    });
    expect(asJson.status).toBe(415);
    expect(asJson.headers["accept-post"]).toBe("application/x-ndjson");
    expect((await uploadImport(partner, "\n\n")).status).toBe(422);
  });
});
