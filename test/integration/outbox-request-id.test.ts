import { closeDatabase, openDatabase } from "../../shared/db";
import { addOutboxClaims, appendEvent, claimUnpublished, createOutboxTable } from "../../shared/outbox";
import { withRequestId } from "../../shared/request-context";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

const SCHEMA = "outbox_request_id_test";

describe("outbox events remember the request that raised them", () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    const db = openDatabase(database.url, 2);
    await db.raw("CREATE SCHEMA IF NOT EXISTS ??", [SCHEMA]);
    await createOutboxTable(db, SCHEMA);
    await addOutboxClaims(db, SCHEMA);
  });
  afterAll(async () => {
    await closeDatabase(database.url);
    await database.drop();
  });

  it("when an event is appended while handling a request, then the relay reads its request id; outside a request it has none", async () => {
    const db = openDatabase(database.url, 2);
    const event = { event: "sales_order_validated", ownerClientId: 7, entityId: 1, data: { code: "ORD-1" } } as const;
    await withRequestId("req-outbox-1", () => db.transaction((trx) => appendEvent(trx, SCHEMA, event)));
    await db.transaction((trx) => appendEvent(trx, SCHEMA, { ...event, entityId: 2 }));

    const claimed = (await claimUnpublished(db, SCHEMA, 10, 60_000)).events;
    expect(claimed.map((e) => [e.entityId, e.requestId])).toEqual([[1, "req-outbox-1"], [2, undefined]]);
  });
});
