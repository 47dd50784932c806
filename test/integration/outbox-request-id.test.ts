import { closeDatabase, openDatabase } from "../../shared/database/db";
import {
  addOutboxClaims,
  addOutboxTraceparent,
  appendEvent,
  claimUnpublished,
  createOutboxTable,
} from "../../shared/messaging/outbox";
import { withRequestId } from "../../shared/observability/request-context";
import { resumeTrace } from "../../shared/observability/tracing";
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
    await addOutboxTraceparent(db, SCHEMA);
  });
  afterAll(async () => {
    await closeDatabase(database.url);
    await database.drop();
  });

  it("when an event is appended while handling a request, then the relay reads its request id and trace; outside a request it has neither", async () => {
    const db = openDatabase(database.url, 2);
    const event = { event: "sales_order_validated", ownerClientId: 7, entityId: 1, data: { code: "ORD-1" } } as const;
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    await withRequestId("req-outbox-1", () =>
      resumeTrace(traceparent, "test", {}, () => db.transaction((trx) => appendEvent(trx, SCHEMA, event))),
    );
    await db.transaction((trx) => appendEvent(trx, SCHEMA, { ...event, entityId: 2 }));

    const claimed = (await claimUnpublished(db, SCHEMA, 10, 60_000)).events;
    expect(claimed.map((e) => [e.entityId, e.requestId, e.traceparent])).toEqual([
      [1, "req-outbox-1", traceparent],
      [2, undefined, undefined],
    ]);
  });
});
