/**
 * Group commit for short, independent writes that arrive together (issue 23: the webhooks
 * fan-out's one statement per event was a transaction, and a WAL flush, per event). A write that
 * finds a writer free (`writers`, one by default) runs at once, on its own; the writes that
 * arrive while every writer is busy wait for the first to be free and then run together, one
 * after the other in one transaction: one commit for all. Nothing waits for company, so a lone
 * write costs what it did; more writers keep a group's statements from queuing behind one
 * connection's round trips when the machine is busy, at the price of smaller groups.
 *
 * Two kinds of write share a group:
 *  - `run`: one statement, run as it is. It must be safe to run again (idempotent): when it
 *    fails in a group, the transaction is aborted, so the group is rolled back and each of its
 *    writes runs again on its own — one bad statement fails alone, never taking others with it.
 *  - `checkedTransaction`: a transaction body of several statements that refuses (throws a
 *    domain error: not found, a conflict, a failed precondition) only before it has written
 *    anything. Alone it is a transaction; in a group its statements run in the group's
 *    transaction as they are, with no savepoint around them (two round trips fewer each): a
 *    refusal fails alone and the others commit, since it left nothing behind. Any other error —
 *    a failed statement, which aborts the transaction, a deadlock with another group's locks —
 *    rolls the group back, and each of its writes runs again on its own.
 * Either kind resolves only once its rows are committed; when the commit fails, every write of
 * the group runs again on its own (none of them was written).
 */
import { AsyncResource } from "node:async_hooks";
import type { Knex } from "knex";
import { isRefusal } from "../errors";

interface Queued {
  work: (db: Knex) => Promise<unknown>;
  /** A transaction body (`checkedTransaction`): alone in a transaction; in a group, its refusal fails it alone. */
  checked: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** How one write of a group ended, before the group's commit says whether it stands. */
type Ended = { ok: true; value: unknown } | { ok: false; err: unknown };

export interface GroupCommitOptions {
  /** Writes per transaction at most: keeps each transaction short however many wait. */
  maxGroup?: number;
  /** Transactions under way at once (each on a connection of its own). */
  writers?: number;
}

export class GroupCommit {
  private queue: Queued[] = [];
  private busyWriters = 0;
  private readonly maxGroup: number;
  private readonly writers: number;

  constructor(
    private readonly db: Knex,
    { maxGroup = 32, writers = 1 }: GroupCommitOptions = {},
  ) {
    this.maxGroup = maxGroup;
    this.writers = writers;
  }

  /** Runs `work` at once on its own, outside any group: for a write whose rows others must see as soon as it is done. */
  runAlone<T>(work: (db: Knex) => Promise<T>): Promise<T> {
    return work(this.db);
  }

  /** Runs the statement `work` alone, or in a transaction with the writes that arrived with it; resolves after the commit. */
  run<T>(work: (db: Knex) => Promise<T>): Promise<T> {
    return this.enqueue(work, false);
  }

  /**
   * Runs `work` as a transaction of its own, or in a group's transaction with the writes that
   * arrived with it; resolves after the commit. `work` must refuse only before it writes: in a
   * group, what it wrote before a refusal would be committed with the others.
   */
  checkedTransaction<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.enqueue(work as (db: Knex) => Promise<T>, true);
  }

  private enqueue<T>(work: (db: Knex) => Promise<T>, checked: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // It runs in its caller's context (request id, trace), not in that of whoever started the group.
      this.queue.push({ work: AsyncResource.bind(work), checked, resolve, reject });
      if (this.busyWriters < this.writers) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.busyWriters += 1;
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.maxGroup);
        if (group.length === 1) await this.alone(group[0]);
        else await this.together(group);
      }
    } finally {
      this.busyWriters -= 1;
    }
  }

  private async alone(q: Queued): Promise<void> {
    try {
      q.resolve(await (q.checked ? this.db.transaction(q.work) : q.work(this.db)));
    } catch (err) {
      q.reject(err);
    }
  }

  private async together(group: Queued[]): Promise<void> {
    let ended: Ended[];
    try {
      ended = await this.db.transaction(async (trx) => {
        const done: Ended[] = [];
        for (const q of group) {
          try {
            done.push({ ok: true, value: await q.work(trx) });
          } catch (err) {
            // Anything but a transaction body's refusal rolls the group back (below).
            if (!q.checked || !isRefusal(err)) throw err;
            done.push({ ok: false, err });
          }
        }
        // A body that caught a failed statement and then refused would leave the transaction
        // aborted, and PostgreSQL answers COMMIT in an aborted transaction with a silent ROLLBACK:
        // a statement after any refusal says so, as an error, before the others are told "written".
        if (done.some((e) => !e.ok)) await trx.raw("SELECT 1");
        return done;
      });
    } catch {
      // Rolled back: each again on its own, so that only a bad one fails.
      for (const q of group) await this.alone(q);
      return;
    }
    group.forEach((q, i) => {
      const e = ended[i];
      if (e.ok) q.resolve(e.value);
      else q.reject(e.err);
    });
  }
}
