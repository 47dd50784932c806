/**
 * A job that runs once per interval across every replica of a service (retention pruning).
 * Each replica checks now and then; the one whose check claims the job's row in
 * `<schema>.job_runs` runs it, the others find the row claimed and wait for the next interval.
 * A claim row rather than an advisory lock: it needs no session held open (PGlite has a single
 * connection, a pool hands out a different one each time), and it keeps working when the
 * replica that claimed dies: its run is simply not repeated before the next interval.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import type { Db } from "./db";
import { PollingLoop } from "../polling-loop";

/** Creates `<schema>.job_runs`; call from a migration of the service that runs jobs. */
export async function createJobRunsTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).createTable("job_runs", (t) => {
    t.text("job").primary();
    t.timestamp("started_at", { useTz: true }).notNullable();
  });
}

export async function dropJobRunsTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).dropTableIfExists("job_runs");
}

/**
 * Claims this interval's run of `job` in one statement: true for exactly one caller per
 * interval, whichever replica asks first.
 */
export async function claimJobRun(db: Db, schema: string, job: string, everyMs: number): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>(
    `INSERT INTO ??.job_runs AS r (job, started_at) VALUES (?, now())
     ON CONFLICT (job) DO UPDATE SET started_at = now()
      WHERE r.started_at <= now() - ?::bigint * interval '1 millisecond'
     RETURNING job`,
    [schema, job, everyMs],
  );
  return rows.length > 0;
}

export interface PeriodicJobOptions {
  db: Db;
  schema: string;
  /** The job's name in job_runs. */
  job: string;
  everyMs: number;
  logger: Service["logger"];
  /** The work; it stops between two batches once `keepGoing()` turns false (the service stops). */
  run(keepGoing: () => boolean): Promise<void>;
  /**
   * Whether the job may run yet. A service's mixins start in an order of Moleculer's choosing,
   * so a job started beside the migrations waits until the broker has started every service
   * (its tables exist by then) instead of failing its first round.
   */
  ready?: () => boolean;
}

/** How often a job that is not ready yet looks again. */
const NOT_READY_PAUSE_MS = 250;

/** Rows one pruning statement removes at most: each is a short transaction of its own. */
export const PRUNE_BATCH = 1_000;

/**
 * Calls `pruneBatch(PRUNE_BATCH)` until a batch removes fewer rows (nothing more is due) or
 * `keepGoing()` turns false; resolves to the rows removed. No lock outlives one statement.
 */
export async function pruneInBatches(
  pruneBatch: (limit: number) => Promise<number>,
  keepGoing: () => boolean,
): Promise<number> {
  let total = 0;
  for (;;) {
    const removed = await pruneBatch(PRUNE_BATCH);
    total += removed;
    if (removed < PRUNE_BATCH || !keepGoing()) return total;
  }
}

/** A replica looks at least this often whether the job is due, so a short interval is kept. */
const LONGEST_CHECK_MS = 60_000;

export class PeriodicJob {
  private readonly loop = new PollingLoop({ round: () => this.round() });
  /** Once `ready()` said yes: it is not asked again. */
  private ready = false;

  constructor(private readonly opts: PeriodicJobOptions) {}

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Runs the job if this interval's run is still unclaimed; true when it ran here. Exposed for tests. */
  async runIfDue(): Promise<boolean> {
    const { db, schema, job, everyMs } = this.opts;
    if (!(await claimJobRun(db, schema, job, everyMs))) return false;
    await this.opts.run(() => this.loop.running);
    return true;
  }

  private async round(): Promise<number> {
    if (!this.ready) {
      if (this.opts.ready && !this.opts.ready()) return NOT_READY_PAUSE_MS;
      this.ready = true;
    }
    try {
      await this.runIfDue();
    } catch (err) {
      // The next interval tries again; what was pruned stays pruned.
      this.opts.logger.warn(
        `${this.opts.job} in "${this.opts.schema}" failed, will run again next interval: ${(err as Error).message}`,
      );
    }
    return Math.min(this.opts.everyMs, LONGEST_CHECK_MS);
  }
}
