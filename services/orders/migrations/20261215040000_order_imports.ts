import type { Knex } from "knex";

const SCHEMA = "orders";

/**
 * Background imports (services/orders/orders.import-worker.ts): a row per import, claimed with a
 * lease; the uploaded lines in chunks until the import ends; one result per line, written in the
 * transaction that creates its order, so a worker that dies resumes at the lines with no result.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).createTable("order_imports", (t) => {
    t.increments("id");
    t.integer("client_id").notNullable();
    // The importer as it was at upload time: its orders are taken with its scopes.
    t.jsonb("principal").notNullable();
    // receiving: the upload is still arriving (no client knows the id yet).
    t.text("status").notNullable().defaultTo("receiving");
    t.integer("total").notNullable().defaultTo(0);
    t.integer("created").notNullable().defaultTo(0);
    t.integer("rejected").notNullable().defaultTo(0);
    t.integer("duplicates").notNullable().defaultTo(0);
    // The first line of the chunk the worker has not finished yet.
    t.integer("next_line").notNullable().defaultTo(0);
    t.integer("attempts").notNullable().defaultTo(0);
    t.uuid("claim_token");
    t.timestamp("claimed_until", { useTz: true });
    t.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp("queued_at", { useTz: true });
    t.timestamp("started_at", { useTz: true });
    t.timestamp("finished_at", { useTz: true });
  });
  await knex.raw(
    `ALTER TABLE ??.order_imports ADD CONSTRAINT order_imports_status
       CHECK (status IN ('receiving', 'queued', 'running', 'completed', 'failed'))`,
    [SCHEMA],
  );
  // The claim looks only at unfinished imports; retention at finished ones by age.
  await knex.raw(
    `CREATE INDEX order_imports_unfinished ON ??.order_imports (id) WHERE status IN ('receiving', 'queued', 'running')`,
    [SCHEMA],
  );
  await knex.raw(`CREATE INDEX order_imports_finished_at ON ??.order_imports (finished_at)`, [SCHEMA]);
  await knex.schema.withSchema(SCHEMA).createTable("order_import_lines", (t) => {
    t.integer("import_id").notNullable().references("id").inTable(`${SCHEMA}.order_imports`).onDelete("CASCADE");
    t.integer("first_line").notNullable();
    // The chunk's lines as uploaded, newline-separated (NDJSON), parsed when worked on.
    t.text("lines").notNullable();
    t.primary(["import_id", "first_line"]);
  });
  await knex.schema.withSchema(SCHEMA).createTable("order_import_results", (t) => {
    t.integer("import_id").notNullable().references("id").inTable(`${SCHEMA}.order_imports`).onDelete("CASCADE");
    t.integer("line").notNullable();
    t.smallint("status").notNullable();
    t.integer("order_id");
    t.jsonb("problem");
    // One result per line: a second worker's attempt at a line fails here, its order with it.
    t.primary(["import_id", "line"], { constraintName: "order_import_results_one_per_line" });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("order_import_results");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("order_import_lines");
  await knex.schema.withSchema(SCHEMA).dropTableIfExists("order_imports");
}
