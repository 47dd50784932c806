/**
 * The import worker: claims one queued import at a time (or one whose worker died: its lease
 * ran out), takes its lines chunk after chunk in line order, and ends it, with its
 * `order_import_completed` event in the transaction that marks it so. Where to resume is read
 * from the rows already written (the chunk the job row points at, the lines of it that have a
 * result), never from memory, so any replica picks up where a dead one stopped.
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { JobLoop } from "../../shared/polling-loop";
import { appendEvent } from "../../shared/messaging/outbox";
import { uniqueViolation } from "../../shared/database/db";
import { importLines, type PendingLine } from "./orders.import-lines";
import type { Intake } from "./orders.intake";
import { presentImport } from "./orders.import-representation";
import {
  advance,
  chunkAt,
  claimImport,
  finishImport,
  linesWithResults,
  renewLease,
  type ImportRow,
} from "./orders.imports.repository";

/** The results' primary key (migrations/20261215040000_order_imports.ts): one result per line. */
const ONE_RESULT_PER_LINE = "order_import_results_one_per_line";

/**
 * A claim lasts this long, renewed every third of it while the worker works: only a worker
 * that died lets it run out, and another replica (or the same one, restarted) resumes soon after.
 */
export const IMPORT_LEASE_MS = 15_000;
/** Lines taken as one batch (orders.batch-intake.ts): one transaction writes their orders and results. */
const LINES_PER_BATCH = 100;
/** Claims of an import in a row that end without finishing a chunk (a line that always fails on our side): then it fails. */
const MAX_ATTEMPTS = 10;

export interface ImportWorkerOptions {
  db: Knex;
  logger: Service["logger"];
  intervalMs: number;
  /** False until the broker started every service (the tables exist, the calls have somewhere to go). */
  ready(): boolean;
  /** How a line is taken, for the importing client (orders.import-line.ts). */
  intakeFor(client: ImportRow["principal"]): Intake;
}

export class ImportWorker extends JobLoop<ImportRow> {
  constructor(private readonly opts: ImportWorkerOptions) {
    super({ name: "Order import", logger: opts.logger, intervalMs: opts.intervalMs, ready: () => opts.ready() });
  }

  protected claim(): Promise<ImportRow | undefined> {
    return claimImport(this.opts.db, IMPORT_LEASE_MS);
  }

  /** Chunk after chunk until the import ends, the claim is lost, or the process stops (the lease then hands it on). */
  protected async work(job: ImportRow): Promise<void> {
    if (job.attempts > MAX_ATTEMPTS) return this.finish(job, "failed");
    const heartbeat = setInterval(() => {
      renewLease(this.opts.db, job, IMPORT_LEASE_MS).catch((err: Error) =>
        this.opts.logger.warn(`Order import ${job.id}: lease not renewed: ${err.message}`),
      );
    }, IMPORT_LEASE_MS / 3);
    try {
      await this.workOn(job);
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async workOn(job: ImportRow): Promise<void> {
    const intake = this.opts.intakeFor(job.principal);
    let next = job.next_line;
    while (this.running) {
      const chunk = next < job.total ? await chunkAt(this.opts.db, job.id, next) : undefined;
      if (!chunk) return this.finish(job, "completed");
      const lines = chunk.lines.split("\n");
      const end = chunk.first_line + lines.length;
      const done = await linesWithResults(this.opts.db, job.id, chunk.first_line, end);
      const todo = lines
        .map((text, i) => ({ text, line: chunk.first_line + i }))
        .filter(({ line }) => line >= next && !done.has(line));
      for (let at = 0; at < todo.length && this.running; at += LINES_PER_BATCH) {
        if (!(await this.take(intake, job, todo.slice(at, at + LINES_PER_BATCH)))) return;
        // PGlite answers on this thread without a pause: requests waiting on sockets get their turn here.
        await yieldToEventLoop();
      }
      if (!this.running) return;
      if (!(await advance(this.opts.db, job, end, IMPORT_LEASE_MS))) return;
      next = end;
    }
  }

  /** Takes these lines; false when another worker took them meanwhile (the claim was lost). */
  private async take(intake: Intake, job: ImportRow, lines: PendingLine[]): Promise<boolean> {
    try {
      await importLines(intake, job.id, lines);
      return true;
    } catch (err) {
      if (uniqueViolation(err) === ONE_RESULT_PER_LINE) return false;
      throw err;
    }
  }

  private async finish(job: ImportRow, status: "completed" | "failed"): Promise<void> {
    const ended = await this.opts.db.transaction(async (trx) => {
      const row = await finishImport(trx, job, status);
      if (row)
        await appendEvent(trx, "orders", {
          event: "order_import_completed",
          ownerClientId: row.client_id,
          entityId: row.id,
          data: presentImport(row),
        });
      return row;
    });
    if (ended)
      this.opts.logger.info(
        { importId: ended.id, status, created: ended.created, rejected: ended.rejected, duplicates: ended.duplicates },
        "order import ended",
      );
  }
}
