/**
 * The soak's per-window PostgreSQL figures (bench/database-activity.ts, ServerIoWindows) read
 * from a real server: the first reading only sets the start, the next counts what was written
 * since — WAL included — on the test's own database.
 */
import knexFactory from "knex";
import { ServerIoWindows } from "../../bench/database-activity";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { requires } from "../helpers/prerequisites";

const describeWithPostgres = requires(["postgres"]).describe;

describeWithPostgres("bench: what PostgreSQL read and wrote in a window", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it("when rows are written between two readings, then the window shows the WAL they made and the blocks asked for", async () => {
    const windows = new ServerIoWindows(database.url, new URL(database.url).pathname.slice(1));
    expect(await windows.take()).toBeNull();
    const db = knexFactory({ client: "pg", connection: database.url, pool: { min: 0, max: 1 } });
    try {
      await db.raw("CREATE TABLE filler (id serial primary key, body text)");
      await db.raw("INSERT INTO filler (body) SELECT repeat('x', 200) FROM generate_series(1, 20000)");
      await db.raw("SELECT count(*) FROM filler");
    } finally {
      await db.destroy();
    }
    const io = await windows.take();
    expect(io).not.toBeNull();
    expect(io!.walMB).toBeGreaterThan(1);
    expect(io!.cacheHitPercent).toBeGreaterThan(0);
    expect(io!.cacheHitPercent).toBeLessThanOrEqual(100);
    for (const value of Object.values(io!)) expect(value).toBeGreaterThanOrEqual(0);
  });
});
