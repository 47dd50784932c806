/**
 * Group commit for short, independent writes that arrive together (issue 23: the webhooks
 * fan-out's one statement per event was a transaction, and a WAL flush, per event). A write that
 * finds nothing under way runs at once, on its own; the writes that arrive while it runs wait
 * for it and then run together, one after the other in one transaction: one commit for all.
 * Nothing waits for company, so a lone write costs what it did.
 *
 * Each write must be safe to run again (an idempotent statement): when any write of a group
 * fails, or the commit does, the whole transaction is rolled back and each write runs again on
 * its own, so one bad write fails alone and never takes the others with it.
 */
import { AsyncResource } from "node:async_hooks";
import type { Knex } from "knex";

interface Queued {
  work: (db: Knex) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export class GroupCommit {
  private queue: Queued[] = [];
  private writing = false;

  constructor(
    private readonly db: Knex,
    /** Writes per transaction at most: keeps each transaction short however many wait. */
    private readonly maxGroup = 32,
  ) {}

  /** Runs `work` at once on its own, outside any group: for a write whose rows others must see as soon as it is done. */
  runAlone<T>(work: (db: Knex) => Promise<T>): Promise<T> {
    return work(this.db);
  }

  /** Runs `work` alone, or in a transaction with the writes that arrived with it; resolves after the commit. */
  run<T>(work: (db: Knex) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // It runs in its caller's context (request id, trace), not in that of whoever started the group.
      this.queue.push({ work: AsyncResource.bind(work), resolve, reject });
      if (!this.writing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.maxGroup);
        if (group.length === 1) await this.alone(group[0]);
        else await this.together(group);
      }
    } finally {
      this.writing = false;
    }
  }

  private async alone(q: Queued): Promise<void> {
    try {
      q.resolve(await q.work(this.db));
    } catch (err) {
      q.reject(err);
    }
  }

  private async together(group: Queued[]): Promise<void> {
    let results: unknown[];
    try {
      results = await this.db.transaction(async (trx) => {
        const done: unknown[] = [];
        for (const q of group) done.push(await q.work(trx));
        return done;
      });
    } catch {
      // Rolled back: each again on its own, so that only a bad one fails.
      for (const q of group) await this.alone(q);
      return;
    }
    group.forEach((q, i) => q.resolve(results[i]));
  }
}
