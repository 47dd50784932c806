/**
 * bench:feed — what the events feed's no-gap rule costs (docs/architecture.md, "The events
 * feed"): the time from an event's commit to the first page of the feed that holds it, while 8
 * writers commit events at once. A row is read only below the oldest transaction still open in the
 * cluster, so an event waits for every transaction that got its id before it to end.
 *
 * On PostgreSQL only (PostgreSQL on 127.0.0.1:5432, or BENCH_POSTGRES_URL), through the same
 * code a page runs (shared/messaging/outbox-feed.ts: the horizon, then the producer's rows):
 * no gateway, no transporter, so the figure is the rule's own delay plus one read. Two phases:
 *  - writers: 8 writers, each a transaction appending one event and holding it 0-5 ms (a change's
 *    own work), as fast as they can, and a reader paging as fast as it can;
 *  - writers + a long transaction: the same, with one more transaction somewhere in the cluster
 *    that has written something and stays open 500 ms, again and again (a slow job elsewhere).
 * Prints p50/p99/max commit-to-visible and events/s per phase, with the load average, and the
 * longest transaction seen open in the server's other databases meanwhile: the horizon is the
 * cluster's, so on a shared server they delay this feed too.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { Knex } from "knex";
import { migrateAll } from "../runtime/migrations";
import { closeDatabase, openDatabase } from "../shared/database/db";
import { appendEvent } from "../shared/messaging/outbox";
import { feedHorizon, readFeedRows, type OutboxPosition } from "../shared/messaging/outbox-feed";
import { createFreshDatabase } from "./databases";

const SERVER = process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const WRITERS = 8;
const PHASE_MS = 10_000;
const LONG_TX_MS = 500;
const OWNER = 1;

interface PhaseResult {
  phase: string;
  events: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  pages: number;
  /** The longest-open transaction with an id seen in OTHER databases of the server meanwhile (sampled). */
  othersLongestMs: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function phase(db: Knex, name: string, longTransactions: boolean): Promise<PhaseResult> {
  const committedAt = new Map<number, number>();
  const seenAt = new Map<number, number>();
  let seq = 0;
  let running = true;
  const writer = async () => {
    while (running) {
      const mine = seq++;
      await db.transaction(async (trx) => {
        await appendEvent(trx, "orders", {
          event: "sales_order_created",
          ownerClientId: OWNER,
          entityId: mine,
          data: { seq: mine },
        });
        await trx.raw(`SELECT pg_sleep(?)`, [Math.random() * 0.005]);
      });
      committedAt.set(mine, performance.now());
    }
  };
  const longTransaction = async () => {
    while (running) {
      await db.transaction(async (trx) => {
        await trx.raw(`SELECT pg_current_xact_id()`);
        await trx.raw(`SELECT pg_sleep(?)`, [LONG_TX_MS / 1000]);
      });
    }
  };
  let pages = 0;
  let after: OutboxPosition = { tx: "0", id: 0 };
  const reader = async () => {
    while (running || seenAt.size < committedAt.size) {
      const below = await feedHorizon(db);
      const { rows } = await readFeedRows(db, "orders", {
        after,
        below,
        ownEvents: [],
        ownerClientId: OWNER,
        everyOwnerEvents: ["sales_order_created"],
        limit: 500,
      });
      pages++;
      const now = performance.now();
      for (const r of rows) seenAt.set((r.data as { seq: number }).seq, now);
      const last = rows.at(-1);
      if (last) after = { tx: last.tx, id: last.id };
    }
  };
  let othersLongestMs = 0;
  const watchOthers = async () => {
    while (running) {
      const { rows } = await db.raw<{ rows: { ms: number | null }[] }>(
        `SELECT extract(epoch FROM max(clock_timestamp() - xact_start)) * 1000 AS ms FROM pg_stat_activity
          WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()`,
      );
      othersLongestMs = Math.max(othersLongestMs, Number(rows[0]?.ms ?? 0));
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const started = performance.now();
  const work = [
    watchOthers(),
    ...Array.from({ length: WRITERS }, writer),
    ...(longTransactions ? [longTransaction()] : []),
    reader(),
  ];
  await new Promise((r) => setTimeout(r, PHASE_MS));
  running = false;
  await Promise.all(work);
  const elapsed = (performance.now() - started) / 1000;
  const delays = [...committedAt].map(([s, at]) => Math.max(0, seenAt.get(s)! - at)).sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    phase: name,
    events: committedAt.size,
    eventsPerSecond: Math.round(committedAt.size / elapsed),
    p50Ms: round(percentile(delays, 50)),
    p99Ms: round(percentile(delays, 99)),
    maxMs: round(delays.at(-1) ?? NaN),
    pages,
    othersLongestMs: round(othersLongestMs),
  };
}

async function main(): Promise<void> {
  const database = await createFreshDatabase(SERVER, `oi_bench_feed_${Date.now().toString(36)}`);
  const db = openDatabase(database.url);
  try {
    await migrateAll(db);
    const results = [
      await phase(db, "8 writers", false),
      await phase(db, `8 writers + a ${LONG_TX_MS} ms transaction`, true),
    ];
    console.table(results);
    console.log(
      `load average (1, 5, 15 min): ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(", ")}; ${os.cpus().length} cores`,
    );
  } finally {
    await closeDatabase(database.url);
    await database.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
