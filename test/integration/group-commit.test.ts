/**
 * Group commit (shared/database/group-commit.ts) on the test database: writes that arrive while
 * one runs commit together, in one transaction; a bad write fails alone; each write runs in its
 * caller's request context.
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { GroupCommit } from "../../shared/database/group-commit";
import { currentRequestId, withRequestId } from "../../shared/observability/request-context";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

describe("group commit", () => {
  let database: TestDatabase;
  let db: Knex;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDatabase(database.url);
    await db.raw(`CREATE TABLE group_commit_rows (id int PRIMARY KEY, tx text NOT NULL)`);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  /** Inserts row `id` (idempotent), answering the transaction it ran in. */
  const insert = (id: number) => async (q: Knex) => {
    const { rows } = await q.raw<{ rows: { tx: string }[] }>(
      `INSERT INTO group_commit_rows (id, tx) VALUES (?, txid_current()::text)
       ON CONFLICT (id) DO UPDATE SET tx = excluded.tx RETURNING tx`,
      [id],
    );
    return rows[0].tx;
  };
  const stored = async (ids: number[]) =>
    ((await db.table("group_commit_rows").whereIn("id", ids).orderBy("id")) as { id: number }[]).map((r) => r.id);

  it("when writes arrive while one runs, then they commit together in one transaction, each with its own answer", async () => {
    const writes = new GroupCommit(db);
    const txs = await Promise.all([1, 2, 3, 4, 5].map((id) => writes.run(insert(id))));
    // The first ran alone; the four that arrived meanwhile shared the next transaction.
    expect(new Set(txs.slice(1)).size).toBe(1);
    expect(txs[0]).not.toBe(txs[1]);
    expect(await stored([1, 2, 3, 4, 5])).toEqual([1, 2, 3, 4, 5]);
  });

  it("when a write of the group fails, then it fails alone: the others are written, each on its own", async () => {
    const writes = new GroupCommit(db);
    const bad = (q: Knex) => q.raw(`INSERT INTO group_commit_rows (id, tx) VALUES (NULL, 'x')`);
    const results = await Promise.allSettled([
      writes.run(insert(10)),
      writes.run(insert(11)),
      writes.run(bad),
      writes.run(insert(12)),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/null value/);
    expect(await stored([10, 11, 12])).toEqual([10, 11, 12]);
  });

  it("when writes run together, then each sees its own caller's request context", async () => {
    const writes = new GroupCommit(db);
    const seen = await Promise.all(
      ["first", "second", "third"].map((id) =>
        withRequestId(id, () =>
          writes.run(async (q) => {
            await q.raw("SELECT 1");
            return currentRequestId();
          }),
        ),
      ),
    );
    expect(seen).toEqual(["first", "second", "third"]);
  });
});
