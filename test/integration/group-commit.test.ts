/**
 * Group commit (shared/database/group-commit.ts) on the test database: writes that arrive while
 * one runs commit together, in one transaction; a bad write fails alone; each write runs in its
 * caller's request context. Transaction bodies run as savepoints of the group's: one that fails
 * is rolled back alone, a deadlock between two groups runs its victim again alone, and an event
 * appended in one wakes the relay only once the group has committed.
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { GroupCommit } from "../../shared/database/group-commit";
import { appendEvent, onEventsCommitted } from "../../shared/messaging/outbox";
import { currentRequestId, withRequestId } from "../../shared/observability/request-context";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

describe("group commit", () => {
  let database: TestDatabase;
  let db: Knex;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDatabase(database.url);
    await db.raw(`CREATE TABLE group_commit_rows (id int PRIMARY KEY, tx text NOT NULL)`);
    await db.raw(`CREATE TABLE group_commit_counters (id int PRIMARY KEY, n int NOT NULL)`);
    // The columns appendEvent writes (shared/messaging/outbox.ts), in a schema of the test's own.
    await db.raw(`CREATE SCHEMA group_commit_events`);
    await db.raw(
      `CREATE TABLE group_commit_events.outbox (id bigserial PRIMARY KEY, event text, owner_client_id int,
         entity text, entity_id int, data jsonb, request_id text, traceparent text)`,
    );
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

  it("when a second writer is free, then a write that arrives runs at once, and only the rest wait to run together", async () => {
    const writes = new GroupCommit(db, { writers: 2 });
    const txs = await Promise.all([20, 21, 22, 23, 24, 25].map((id) => writes.run(insert(id))));
    // The first two each took a writer; the four that found both busy shared the next transaction.
    expect(new Set(txs).size).toBe(3);
    expect(new Set(txs.slice(2)).size).toBe(1);
    expect(await stored([20, 21, 22, 23, 24, 25])).toEqual([20, 21, 22, 23, 24, 25]);
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

  describe("transaction bodies", () => {
    /** Increments counter `id` by one, answering the transaction it ran in. */
    const increment = (id: number) => async (trx: Knex.Transaction) => {
      const { rows } = await trx.raw<{ rows: { tx: string }[] }>(
        `INSERT INTO group_commit_counters (id, n) VALUES (?, 1)
         ON CONFLICT (id) DO UPDATE SET n = group_commit_counters.n + 1 RETURNING txid_current()::text AS tx`,
        [id],
      );
      return rows[0].tx;
    };
    const counters = async (ids: number[]) =>
      ((await db.table("group_commit_counters").whereIn("id", ids).orderBy("id")) as { id: number; n: number }[]).map(
        (r) => [r.id, r.n],
      );

    it("when transactions arrive while one runs, then they commit together, each with its own answer", async () => {
      const writes = new GroupCommit(db);
      const txs = await Promise.all([101, 102, 103, 104].map((id) => writes.transaction(increment(id))));
      expect(new Set(txs.slice(1)).size).toBe(1);
      expect(txs[0]).not.toBe(txs[1]);
      expect(await counters([101, 102, 103, 104])).toEqual([
        [101, 1],
        [102, 1],
        [103, 1],
        [104, 1],
      ]);
    });

    it("when one throws after writing, then only its writes are rolled back and it fails with its own error", async () => {
      const writes = new GroupCommit(db);
      const refused = new Error("not allowed");
      const results = await Promise.allSettled([
        writes.transaction(increment(110)),
        writes.transaction(increment(111)),
        writes.transaction(async (trx) => {
          await increment(112)(trx);
          throw refused;
        }),
        writes.transaction(async (trx) => {
          // A failing statement too: its savepoint is rolled back, the group's transaction goes on.
          await increment(113)(trx);
          await trx.raw(`INSERT INTO group_commit_counters (id, n) VALUES (NULL, 1)`);
        }),
        writes.transaction(increment(114)),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected", "fulfilled"]);
      expect((results[2] as PromiseRejectedResult).reason).toBe(refused);
      expect(String((results[3] as PromiseRejectedResult).reason)).toMatch(/null value/);
      // 111 and 114 committed in one transaction with the two that failed: nothing of those stayed.
      expect(await counters([110, 111, 112, 113, 114])).toEqual([
        [110, 1],
        [111, 1],
        [114, 1],
      ]);
    });

    it("when two groups deadlock, then the victim runs again alone after its group commits, and every change is made once", async () => {
      await db.table("group_commit_counters").insert([
        { id: 121, n: 0 },
        { id: 122, n: 0 },
      ]);
      const [a, b] = [new GroupCommit(db), new GroupCommit(db)];
      const signal = () => {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        return { promise, resolve };
      };
      const aHolds121 = signal();
      const bHolds122 = signal();
      const lead = (writes: GroupCommit) => writes.transaction((trx) => trx.raw("SELECT 1"));
      /** One group's two bodies: lock `own` and say so, then wait for the other's row and lock it. */
      const crosswise = (
        writes: GroupCommit,
        own: number,
        held: ReturnType<typeof signal>,
        other: number,
        otherHeld: ReturnType<typeof signal>,
      ) => [
        writes.transaction(async (trx) => {
          await increment(own)(trx);
          held.resolve();
        }),
        writes.transaction(async (trx) => {
          await otherHeld.promise;
          await increment(other)(trx);
        }),
      ];
      // Each group first locks one row, then (in its second transaction) waits for the row the other holds.
      const first = [lead(a), lead(b)];
      const results = await Promise.allSettled([
        ...first,
        ...crosswise(a, 121, aHolds121, 122, bHolds122),
        ...crosswise(b, 122, bHolds122, 121, aHolds121),
      ]);
      expect(results.map((r) => r.status)).toEqual(Array(6).fill("fulfilled"));
      expect(await counters([121, 122])).toEqual([
        [121, 2],
        [122, 2],
      ]);
    });

    it("when one appends an event, then the relay is woken once the group has committed, not when its savepoint ends", async () => {
      const writes = new GroupCommit(db);
      const seenAtWake: Promise<number>[] = [];
      const visibleEvents = async () => {
        const { rows } = await db.raw<{ rows: { n: string }[] }>(
          "SELECT count(*) AS n FROM group_commit_events.outbox",
        );
        return Number(rows[0].n);
      };
      const stop = onEventsCommitted("group_commit_events", () => seenAtWake.push(visibleEvents()));
      try {
        await Promise.all([
          writes.transaction((trx) => trx.raw("SELECT 1")),
          writes.transaction((trx) =>
            appendEvent(trx, "group_commit_events", {
              event: "sales_order_validated",
              ownerClientId: 1,
              entityId: 1,
              data: {},
            }),
          ),
          // The group's transaction is still open for a while after the event's savepoint is released.
          writes.transaction((trx) => trx.raw("SELECT pg_sleep(0.3)")),
        ]);
        expect(seenAtWake).toHaveLength(1);
        expect(await seenAtWake[0]).toBe(1);
      } finally {
        stop();
      }
    });
  });
});
