/**
 * An import as GET /api/v1/order_imports/{id} returns it (also the body of
 * `order_import_completed`), and its results as GET …/results streams them: one NDJSON line per
 * order line, read from the database a page at a time, never all at once.
 */
import { Readable } from "node:stream";
import type { Knex } from "knex";
import type { FromJsonSchema } from "../../shared/schema-types";
import type { OrderImport as OrderImportSchema, OrderImportResult as ResultSchema } from "./orders.imports.openapi";
import { itemsOf } from "./orders.repository";
import { presentOrder } from "./orders.representation";
import { ordersByIds, resultsAfter, type Counts, type ImportRow } from "./orders.imports.repository";

export type OrderImport = FromJsonSchema<typeof OrderImportSchema>;
export type OrderImportResult = FromJsonSchema<typeof ResultSchema, { Order: unknown; Problem: unknown }>;

/** Results read per query. */
const RESULTS_PAGE = 500;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** `counts`: the counts so far of an import under way (the row holds them once it ended). */
export function presentImport(row: ImportRow, counts: Counts = row): OrderImport {
  return {
    id: row.id,
    status: row.status === "receiving" ? "queued" : row.status,
    total: row.total,
    processed: counts.created + counts.rejected + counts.duplicates,
    created: counts.created,
    rejected: counts.rejected,
    duplicates: counts.duplicates,
    createdAt: row.created_at.toISOString(),
    queuedAt: iso(row.queued_at),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
  };
}

/** The import's results so far, in line order, as NDJSON; each created order as it is now. */
export function resultsStream(db: Knex, importId: number): Readable {
  return Readable.from(resultLines(db, importId));
}

async function* resultLines(db: Knex, importId: number): AsyncGenerator<string> {
  let after = -1;
  for (;;) {
    const page = await resultsAfter(db, importId, after, RESULTS_PAGE);
    if (page.length === 0) return;
    const orderIds = page.flatMap((r) => (r.order_id === null ? [] : [r.order_id]));
    const [orders, items] = await Promise.all([ordersByIds(db, orderIds), itemsOf(db, orderIds)]);
    const byId = new Map(orders.map((o) => [o.id, o]));
    let text = "";
    for (const r of page) {
      const order = r.order_id === null ? undefined : byId.get(r.order_id);
      const result: OrderImportResult = {
        index: r.line,
        status: r.status,
        ...(order ? { order: presentOrder(order, items.get(order.id) ?? []) } : {}),
        ...(r.problem ? { problem: r.problem } : {}),
      };
      text += JSON.stringify(result) + "\n";
    }
    yield text;
    after = page[page.length - 1].line;
  }
}
