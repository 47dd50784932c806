/**
 * Group commit (shared/database/group-commit.ts) on the test database: writes that arrive while
 * one runs commit together, in one transaction; a bad write fails alone; each write runs in its
 * caller's request context. Checked transaction bodies run in the group's transaction as they
 * are: one that refuses fails alone; one that fails otherwise, or a deadlock between two groups,
 * rolls its group back and runs each again alone; an event appended in one wakes the relay only
 * once the group has committed.
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { GroupCommit } from "../../shared/database/group-commit";
import { ConflictError } from "../../shared/errors";
import { appendEvent, onEventsCommitted } from "../../shared/messaging/outbox";
import { currentRequestId, withRequestId } from "../../shared/observability/request-context";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { requires } from "../helpers/prerequisites";

/** Two transactions at once, each on a connection of its own: PGlite (the embedded mode) has one. */
const twoConnections = requires(["postgres"]);

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
      const txs = await Promise.all([101, 102, 103, 104].map((id) => writes.checkedTransaction(increment(id))));
      expect(new Set(txs.slice(1)).size).toBe(1);
      expect(txs[0]).not.toBe(txs[1]);
      expect(await counters([101, 102, 103, 104])).toEqual([
        [101, 1],
        [102, 1],
        [103, 1],
        [104, 1],
      ]);
    });

    it("when one refuses before writing, then it fails alone with its own refusal, and the others commit together", async () => {
      const writes = new GroupCommit(db);
      const refused = new ConflictError("not allowed");
      const results = await Promise.allSettled([
        writes.checkedTransaction(increment(110)),
        writes.checkedTransaction(increment(111)),
        writes.checkedTransaction(async (trx) => {
          await trx.raw("SELECT 1");
          throw refused;
        }),
        writes.checkedTransaction(increment(112)),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      expect((results[2] as PromiseRejectedResult).reason).toBe(refused);
      // 111 and 112 shared one transaction with the refused body.
      const [, tx111, , tx112] = results.map((r) => (r as PromiseFulfilledResult<string>).value);
      expect(tx111).toBe(tx112);
      expect(await counters([110, 111, 112])).toEqual([
        [110, 1],
        [111, 1],
        [112, 1],
      ]);
    });

    it("when one fails otherwise, then its group is rolled back and each runs again alone: it fails, the others commit once", async () => {
      const writes = new GroupCommit(db);
      const crash = new Error("not a refusal");
      const results = await Promise.allSettled([
        writes.checkedTransaction(increment(113)),
        writes.checkedTransaction(increment(114)),
        writes.checkedTransaction(async (trx) => {
          // What it wrote before failing is rolled back with the group, and again when it runs alone.
          await increment(115)(trx);
          throw crash;
        }),
        writes.checkedTransaction(async (trx) => {
          await increment(116)(trx);
          await trx.raw(`INSERT INTO group_commit_counters (id, n) VALUES (NULL, 1)`);
        }),
        writes.checkedTransaction(increment(117)),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected", "fulfilled"]);
      expect((results[2] as PromiseRejectedResult).reason).toBe(crash);
      expect(String((results[3] as PromiseRejectedResult).reason)).toMatch(/null value/);
      expect(await counters([113, 114, 115, 116, 117])).toEqual([
        [113, 1],
        [114, 1],
        [117, 1],
      ]);
    });

    it("when one refuses after a failed statement, then the aborted group is not taken as committed: the others run again alone", async () => {
      const writes = new GroupCommit(db);
      const results = await Promise.allSettled([
        writes.checkedTransaction(increment(118)),
        writes.checkedTransaction(increment(119)),
        writes.checkedTransaction(increment(120)),
        // Last of its group: no statement of another body comes after it to meet the aborted transaction.
        writes.checkedTransaction(async (trx) => {
          await trx.raw(`INSERT INTO group_commit_counters (id, n) VALUES (NULL, 1)`).catch(() => undefined);
          throw new ConflictError("refused after a failure");
        }),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected"]);
      expect(await counters([118, 119, 120])).toEqual([
        [118, 1],
        [119, 1],
        [120, 1],
      ]);
    });

    twoConnections.it(
      "when two groups deadlock, then the victim runs again alone after its group commits, and every change is made once",
      async () => {
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
        const lead = (writes: GroupCommit) => writes.checkedTransaction((trx) => trx.raw("SELECT 1"));
        /** One group's two bodies: lock `own` and say so, then wait for the other's row and lock it. */
        const crosswise = (
          writes: GroupCommit,
          own: number,
          held: ReturnType<typeof signal>,
          other: number,
          otherHeld: ReturnType<typeof signal>,
        ) => [
          writes.checkedTransaction(async (trx) => {
            await increment(own)(trx);
            held.resolve();
          }),
          writes.checkedTransaction(async (trx) => {
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
      },
    );

    it("when one appends an event, then the relay is woken once the group has committed, not when its body ends", async () => {
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
          writes.checkedTransaction((trx) => trx.raw("SELECT 1")),
          writes.checkedTransaction((trx) =>
            appendEvent(trx, "group_commit_events", {
              event: "sales_order_validated",
              ownerClientId: 1,
              entityId: 1,
              data: {},
            }),
          ),
          // The group's transaction is still open for a while after the event's body has ended.
          writes.checkedTransaction((trx) => trx.raw("SELECT pg_sleep(0.3)")),
        ]);
        expect(seenAtWake).toHaveLength(1);
        expect(await seenAtWake[0]).toBe(1);
      } finally {
        stop();
      }
    });
  });
});
