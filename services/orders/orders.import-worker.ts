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
import { AT_ONCE, PollingLoop } from "../../shared/polling-loop";
import { appendEvent } from "../../shared/messaging/outbox";
import { importLine, type LineIntake } from "./orders.import-line";
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

/**
 * A claim lasts this long, renewed every third of it while the worker works: only a worker
 * that died lets it run out, and another replica (or the same one, restarted) resumes soon after.
 */
export const IMPORT_LEASE_MS = 15_000;
/** Lines of a chunk taken at once: each is a transaction of its own, with its own calls to resolve references. */
const LINES_AT_ONCE = 4;
/** Claims of an import in a row that end without finishing a chunk (a line that always fails on our side): then it fails. */
const MAX_ATTEMPTS = 10;
const NOT_READY_PAUSE_MS = 250;

export interface ImportWorkerOptions {
  db: Knex;
  logger: Service["logger"];
  intervalMs: number;
  /** False until the broker started every service (the tables exist, the calls have somewhere to go). */
  ready(): boolean;
  /** How a line is taken, for the importing client (orders.import-line.ts). */
  intakeFor(client: ImportRow["principal"]): LineIntake;
}

export class ImportWorker {
  private readonly loop = new PollingLoop({ round: () => this.round() });

  constructor(private readonly opts: ImportWorkerOptions) {}

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** An import was queued: look now rather than at the next round. */
  wake(): void {
    this.loop.wake();
  }

  private async round(): Promise<number | typeof AT_ONCE> {
    if (!this.opts.ready()) return NOT_READY_PAUSE_MS;
    try {
      const claimed = await claimImport(this.opts.db, IMPORT_LEASE_MS);
      if (claimed) {
        await this.work(claimed);
        return AT_ONCE;
      }
    } catch (err) {
      this.opts.logger.warn(`Order import: will try again: ${(err as Error).message}`);
    }
    return this.opts.intervalMs;
  }

  /** Chunk after chunk until the import ends, the claim is lost, or the process stops (the lease then hands it on). */
  private async work(job: ImportRow): Promise<void> {
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
    while (this.loop.running) {
      const chunk = next < job.total ? await chunkAt(this.opts.db, job.id, next) : undefined;
      if (!chunk) return this.finish(job, "completed");
      const lines = chunk.lines.split("\n");
      const end = chunk.first_line + lines.length;
      const done = await linesWithResults(this.opts.db, job.id, chunk.first_line, end);
      const todo = lines
        .map((text, i) => ({ text, line: chunk.first_line + i }))
        .filter(({ line }) => line >= next && !done.has(line));
      // A line that repeats an earlier line's externalId waits for it, so the first one is the order and the repeat the duplicate.
      const [firsts, repeats] = splitRepeats(todo);
      const take = ({ text, line }: PendingLine) => importLine(intake, job.id, line, text);
      await inParallel(firsts, LINES_AT_ONCE, take);
      await inParallel(repeats, 1, take);
      if (!(await advance(this.opts.db, job, end, IMPORT_LEASE_MS))) return;
      next = end;
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

interface PendingLine {
  text: string;
  line: number;
}

/** The lines whose externalId (if any) no earlier line of theirs has, and the others, each in line order. */
function splitRepeats(lines: PendingLine[]): [PendingLine[], PendingLine[]] {
  const seen = new Set<string>();
  const firsts: PendingLine[] = [];
  const repeats: PendingLine[] = [];
  for (const pending of lines) {
    const id = externalIdOf(pending.text);
    if (id !== undefined && seen.has(id)) repeats.push(pending);
    else firsts.push(pending);
    if (id !== undefined) seen.add(id);
  }
  return [firsts, repeats];
}

function externalIdOf(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { externalId?: unknown } | null)?.externalId;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

/** `work` on every item, at most `width` at a time; the first failure is thrown once the others settled. */
async function inParallel<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let at = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (at < items.length) {
      await work(items[at++]);
      // PGlite answers on this thread without a pause in between: requests waiting on sockets get their turn here.
      await yieldToEventLoop();
    }
  });
  const settled = await Promise.allSettled(lanes);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
}
