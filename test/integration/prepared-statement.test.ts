/**
 * Prepared statements (shared/database/prepared-statement.ts) on the test database: a statement
 * is prepared once per connection under a name of its text's and then reused, two texts never
 * share a name (node-postgres refuses a name reused for another text), and the answers are the
 * unprepared statement's. On PGlite (the embedded mode) the name is ignored and the answers hold.
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { prepared, statementName } from "../../shared/database/prepared-statement";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

describe("prepared statements", () => {
  let database: TestDatabase;
  let db: Knex;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDatabase(database.url);
    await db.raw(`CREATE TABLE prepared_rows (id int PRIMARY KEY, label text NOT NULL)`);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  /** The statements this connection has prepared, by name. */
  const preparedOn = async (trx: Knex.Transaction) =>
    (await trx.raw<{ rows: { name: string }[] }>(`SELECT name FROM pg_prepared_statements ORDER BY name`)).rows.map(
      (r) => r.name,
    );

  it("when a statement runs again and again on one connection, then it is prepared once, under its text's name, and answers as unprepared", async () => {
    const lookup = (q: Knex, id: number) =>
      prepared(
        q.raw<{ rows: { id: number; label: string }[] }>(`SELECT id, label FROM prepared_rows WHERE id = ?`, [id]),
      );
    const name = statementName(lookup(db, 0).toSQL().sql);
    await db.transaction(async (trx) => {
      await trx.raw(`INSERT INTO prepared_rows (id, label) VALUES (1, 'one'), (2, 'two'), (3, 'three')`);
      const answers = [];
      for (const id of [1, 2, 3, 4]) answers.push((await lookup(trx, id)).rows);
      expect(answers).toEqual([[{ id: 1, label: "one" }], [{ id: 2, label: "two" }], [{ id: 3, label: "three" }], []]);
      if (database.kind !== "pglite") expect((await preparedOn(trx)).filter((n) => n === name)).toEqual([name]);
      await trx.raw(`DELETE FROM prepared_rows`);
    });
  });

  it("when a statement's text varies (an optional clause, the builder's), then each variant runs under a name of its own on the same connection", async () => {
    const labels = (q: Knex, ids: number[], newest: boolean) => {
      const query = q("prepared_rows").select("label").whereIn("id", ids);
      return prepared(newest ? query.orderBy("id", "desc") : query.orderBy("id"));
    };
    await db.transaction(async (trx) => {
      await trx.raw(`INSERT INTO prepared_rows (id, label) VALUES (1, 'one'), (2, 'two'), (3, 'three')`);
      const answers = [];
      for (const [ids, newest] of [
        [[1, 2], false],
        [[1, 2], true],
        [[1, 2, 3], false],
        [[2, 3], true],
      ] as const)
        answers.push((await labels(trx, [...ids], newest)).map((r: { label: string }) => r.label));
      expect(answers).toEqual([
        ["one", "two"],
        ["two", "one"],
        ["one", "two", "three"],
        ["three", "two"],
      ]);
      const names = new Set([
        statementName(labels(trx, [1, 2], false).toSQL().sql),
        statementName(labels(trx, [1, 2], true).toSQL().sql),
        statementName(labels(trx, [1, 2, 3], false).toSQL().sql),
      ]);
      expect(names.size).toBe(3);
      if (database.kind !== "pglite")
        expect((await preparedOn(trx)).filter((n) => names.has(n)).sort()).toEqual([...names].sort());
      await trx.raw(`DELETE FROM prepared_rows`);
    });
  });
});
