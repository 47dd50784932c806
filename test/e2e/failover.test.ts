/**
 * Issue 10 — a replica dies, the broker or the database restarts: the cluster keeps answering.
 * Real processes (two of every service, one gateway), a private nats-server this file stops and
 * starts, PostgreSQL reached through a TCP relay it closes, a steady load of 100 requests/s that
 * reaches every service (test/helpers/fault-drills.ts). Each drill prints its figures.
 *
 * The outages last 10 s here to keep CI short; `npm run bench:failover` runs them for 30 s.
 * Needs TEST_DATABASE_URL and the nats-server binary; in CI a missing one fails the suite.
 *
 * @run-alone Its bounds (error windows of 2 s, a drain within 1 s) are on a cluster that loads the
 * machine by itself, with more PostgreSQL connections than the server can spare for other files.
 */
import type { LoadOutcome } from "../helpers/steady-load";
import {
  databaseDrill,
  natsDrill,
  REPLICATED_SERVICES,
  replicaDrill,
  startFaultCluster,
  undeliveredEvents,
  type DrillResult,
  type FaultCluster,
} from "../helpers/fault-drills";
import { lastFailureAfterFault } from "../helpers/failover";
import { requires } from "../helpers/prerequisites";
import { ServiceProcess, statusOnce } from "../helpers/processes";

const RATE = 100;
const REPLICA_TIMING = { beforeMs: 2_000, afterMs: 6_000 };
/** The bar of the issue: a replica's death is felt for at most this long. */
const ERROR_WINDOW_BOUND_MS = 2_000;
const OUTAGE_MS = 10_000;
/** After an outage ends, requests pass again within this long (reconnection, rediscovery). */
const RECOVERY_BOUND_MS = 5_000;
/**
 * A request sent during an outage is refused this fast, not after a time-out (10 s). The requests
 * sent in the moment before the NATS client sees its socket close are answered together when it
 * does: 1.2-1.3 s after the cut in one CI run on a busy machine. The bound for any error
 * window, 2 s, is the bound here too.
 */
const FAST_REFUSAL_MS = ERROR_WINDOW_BOUND_MS;

jest.setTimeout(180_000);

// PostgreSQL and private nats-server processes the drills can stop: CI has both.
const describeWithServers = requires(["postgres", "nats-server"]).describe;

function expectNoLoss(r: DrillResult): void {
  expect(r.losses.accepted).toBeGreaterThan(0);
  expect(r.losses.lost).toEqual([]);
  expect(r.losses.duplicated).toEqual([]);
}

const unavailable = (o: LoadOutcome) =>
  o.status === 503 && /^application\/problem\+json/.test(o.contentType ?? "") && Number(o.retryAfter) >= 1;

/** Outcomes of the requests sent while the outage lasted (a margin either side for in-flight ones). */
const sentDuringOutage = (r: DrillResult) =>
  r.run.outcomes.filter((o) => o.sentAt > r.run.faultAt + 500 && o.sentAt < r.run.faultAt + OUTAGE_MS - 500);

/** A GET with no kept-alive connection left behind, so that "idle" means idle (0: no answer). */
const getOnce = (url: string, key: string) =>
  statusOnce(url, { headers: { authorization: `Bearer ${key}` }, timeoutMs: 30_000 });

describeWithServers("failover under load (real processes, private NATS, PostgreSQL)", () => {
  let fc: FaultCluster;
  const results: DrillResult[] = [];

  beforeAll(async () => {
    fc = await startFaultCluster();
  }, 240_000);
  afterAll(async () => {
    await fc?.stop();
  });

  describe.each(REPLICATED_SERVICES)(
    "when one of the two %s processes is killed (SIGKILL) under 100 requests/s",
    (service) => {
      it(`then requests fail for at most ${ERROR_WINDOW_BOUND_MS} ms, and no accepted order is lost or doubled`, async () => {
        const r = await replicaDrill(fc, service, "SIGKILL", RATE, REPLICA_TIMING);
        results.push(r);
        console.log(r.line);
        expect(r.run.summary.errorWindowMs).toBeLessThanOrEqual(ERROR_WINDOW_BOUND_MS);
        expect(r.run.summary.badUnavailableAnswers).toBe(0);
        expectNoLoss(r);
      });
    },
  );

  describe.each(REPLICATED_SERVICES)(
    "when one of the two %s processes is stopped (SIGTERM, a rolling update) under load",
    (service) => {
      it("then no request fails", async () => {
        const r = await replicaDrill(fc, service, "SIGTERM", RATE, REPLICA_TIMING);
        results.push(r);
        console.log(r.line);
        expect(r.run.summary.failuresByStatus).toEqual({});
        expectNoLoss(r);
      });
    },
  );

  it(`when NATS is down for ${OUTAGE_MS / 1000} s under load, then requests are 503 problems with Retry-After at once, /readyz goes false and true, and all comes back by itself`, async () => {
    const r = await natsDrill(fc, OUTAGE_MS, RATE, RECOVERY_BOUND_MS + 3_000);
    results.push(r);
    console.log(r.line);
    assertOutage(r);
  });

  it(`when PostgreSQL is unreachable for ${OUTAGE_MS / 1000} s under load, then requests are 503 problems with Retry-After at once, /readyz goes false and true, and all comes back by itself`, async () => {
    const r = await databaseDrill(fc, OUTAGE_MS, RATE, RECOVERY_BOUND_MS + 3_000);
    results.push(r);
    console.log(r.line);
    assertOutage(r);
  });

  function assertOutage(r: DrillResult): void {
    const during = sentDuringOutage(r);
    const refused = during.filter((o) => o.status !== null && o.status >= 500);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.filter((o) => !unavailable(o))).toEqual([]);
    expect(refused.filter((o) => o.answeredAt - o.sentAt > FAST_REFUSAL_MS)).toEqual([]);
    expect(r.run.outcomes.filter((o) => o.status === null)).toEqual([]);
    expect(r.readiness).toContain(503);
    expect(r.readiness.at(-1)).toBe(200);
    // From the moment the server is back: stopping and starting it is the outage, not the recovery.
    expect(lastFailureAfterFault(r.run)).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    expectNoLoss(r);
  }

  it("then every accepted partner order's sales_order_created webhook is delivered afterwards", async () => {
    expect(results.length).toBeGreaterThan(0);
    for (const r of results)
      expect({ drill: r.name, undelivered: await undeliveredEvents(fc, r, 60_000) }).toEqual({
        drill: r.name,
        undelivered: [],
      });
  });

  it("when calls have timed out, then an idle gateway drains and exits within 1 s of SIGTERM", async () => {
    const gateway = await ServiceProcess.create({
      name: "gateway-drain",
      services: ["gateway"],
      transporter: fc.nats.url,
      databaseUrl: fc.relay.rewrite(fc.cluster.databaseUrl),
      env: { ADMIN_API_KEY: fc.cluster.adminKey, MIGRATE_ON_START: "false", REQUEST_TIMEOUT_MS: "500" },
    });
    await gateway.start();
    const crm = fc.cluster.processes.get("crm")!;
    try {
      expect(await getOnce(`${gateway.baseUrl}/api/v1/contacts?limit=1`, fc.world.backofficeKey)).toBe(200);
      // Frozen crm processes: the calls to them time out (and their retries too).
      for (const p of crm) p.pause();
      const statuses = await Promise.all(
        Array.from({ length: 5 }, () => getOnce(`${gateway.baseUrl}/api/v1/contacts?limit=1`, fc.world.backofficeKey)),
      );
      expect(statuses).toEqual(Array(5).fill(503));
    } finally {
      for (const p of crm) p.resume();
    }
    const sigtermAt = Date.now();
    const exitCode = await gateway.stop();
    const tookMs = Date.now() - sigtermAt;
    await gateway.dispose();
    console.log(`[failover] idle gateway after 5 timed-out requests: exited ${exitCode} ${tookMs} ms after SIGTERM`);
    expect(exitCode).toBe(0);
    expect(tookMs).toBeLessThan(1_000);
  });
});
