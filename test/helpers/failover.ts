/**
 * What the fault tests and the failover bench share: a steady mix of requests that reaches every
 * service, run around a fault, and the orders it accepted checked against the database (none
 * lost, none twice for one externalId).
 */
import pg from "pg";
import type { ApiWorld } from "./api-fixtures";
import { partnerOrderBody } from "./api-fixtures";
import { ADDRESS } from "./fixtures";
import { failed, SteadyLoad, summarize, type FailureSummary, type LoadOutcome, type LoadRequest } from "./steady-load";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One request per service in turn, so that whichever service a fault hits, a share of the load
 * needs it: partner and back-office orders (orders, references, crm, catalogue; clients
 * authenticates every key), and a read from each service.
 */
export function mixedRequests(world: ApiWorld, adminKey: string, run: string): (n: number) => LoadRequest {
  return (n) => {
    const externalId = `${run}-${n}`;
    switch (n % 7) {
      case 0:
        return {
          label: "POST /orders (partner)",
          method: "POST",
          path: "/api/v1/orders",
          key: world.partnerKey,
          externalId,
          body: partnerOrderBody(world, { externalId }),
          headers: { "Idempotency-Key": externalId },
        };
      case 1:
        return {
          label: "POST /orders (back office)",
          method: "POST",
          path: "/api/v1/orders",
          key: world.backofficeKey,
          externalId,
          body: {
            externalId,
            contact: { id: world.contactId },
            invoicingAddress: ADDRESS,
            deliveryAddress: ADDRESS,
            items: [{ packaging: world.packagingIds[0], orderedQuantity: 2 }],
          },
        };
      case 2:
        return { label: "GET /contacts", method: "GET", path: "/api/v1/contacts?limit=5", key: world.backofficeKey };
      case 3:
        return {
          label: "GET /packagings",
          method: "GET",
          path: "/api/v1/packagings?limit=5",
          key: world.backofficeKey,
        };
      case 4:
        return {
          label: "GET /packaging_references",
          method: "GET",
          path: "/api/v1/packaging_references?limit=5",
          key: world.partnerKey,
        };
      case 5:
        return { label: "GET /webhooks", method: "GET", path: "/api/v1/webhooks", key: world.partnerKey };
      default:
        return { label: "GET /clients", method: "GET", path: "/api/v1/clients?limit=1", key: adminKey };
    }
  };
}

export interface LoadRun {
  outcomes: LoadOutcome[];
  /** When the fault began (epoch ms). */
  faultAt: number;
  /** When the fault's action ended (epoch ms): the replica killed or stopped, the server back and accepting. */
  faultEndedAt: number;
  summary: FailureSummary;
}

/**
 * How long after the fault's action ended the last failed request was sent (ms; null when none
 * failed): for an outage, how long the cluster took to come back once the server did.
 */
export function lastFailureAfterFault(run: LoadRun): number | null {
  const sent = run.outcomes.filter(failed).map((o) => o.sentAt);
  // Folded, not spread into Math.max: the failed requests may outnumber a call's arguments.
  return sent.length === 0 ? null : sent.reduce((m, t) => Math.max(m, t), -Infinity) - run.faultEndedAt;
}

/** Steady load for `beforeMs`, then `fault()` (awaited), then `afterMs` more. */
export async function underLoad(
  baseUrl: string,
  perSecond: number,
  next: (n: number) => LoadRequest,
  timing: { beforeMs: number; afterMs: number },
  fault: () => Promise<void>,
): Promise<LoadRun> {
  const load = new SteadyLoad(baseUrl, perSecond, next);
  load.start();
  await sleep(timing.beforeMs);
  const faultAt = Date.now();
  await fault();
  const faultEndedAt = Date.now();
  await sleep(timing.afterMs);
  const outcomes = await load.stop();
  return { outcomes, faultAt, faultEndedAt, summary: summarize(outcomes) };
}

export interface OrderLosses {
  /** Orders answered 201 (or replayed 200) whose externalId is not in the database. */
  lost: string[];
  /** externalIds of this run held by more than one order. */
  duplicated: string[];
  accepted: number;
}

/** Checks every order the load saw accepted against the orders table. */
export async function orderLosses(databaseUrl: string, outcomes: LoadOutcome[], run: string): Promise<OrderLosses> {
  const accepted = outcomes
    .filter((o) => o.externalId && (o.status === 201 || o.status === 200))
    .map((o) => o.externalId!);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ external_id: string; n: string }>(
      "SELECT external_id, count(*) AS n FROM orders.orders WHERE external_id LIKE $1 GROUP BY external_id",
      [`${run}-%`],
    );
    const stored = new Set(rows.map((r) => r.external_id));
    return {
      lost: accepted.filter((id) => !stored.has(id)),
      duplicated: rows.filter((r) => Number(r.n) > 1).map((r) => r.external_id),
      accepted: accepted.length,
    };
  } finally {
    await client.end();
  }
}

/** One line a person reads in the test output or the bench: the figure to watch. */
export function describeRun(name: string, run: LoadRun, losses?: OrderLosses): string {
  const s = run.summary;
  const statuses =
    Object.entries(s.failuresByStatus)
      .map(([k, v]) => `${k}: ${v}`)
      .join(", ") || "none";
  const lossText = losses
    ? `, orders accepted ${losses.accepted}, lost ${losses.lost.length}, duplicated ${losses.duplicated.length}`
    : "";
  // 4xx answers are not failures of the cluster, but many refused orders mean the load itself is wrong.
  const refused: Record<string, number> = {};
  for (const o of run.outcomes)
    if (o.externalId && o.status !== null && o.status >= 400 && o.status < 500)
      refused[o.status] = (refused[o.status] ?? 0) + 1;
  const refusedText =
    Object.keys(refused).length > 0
      ? `, orders refused ${Object.entries(refused)
          .map(([k, v]) => `${k}: ${v}`)
          .join(", ")}`
      : "";
  const after = lastFailureAfterFault(run);
  const afterText =
    after === null
      ? ""
      : `, last failure ${after} ms after the fault ended (took ${run.faultEndedAt - run.faultAt} ms)`;
  return `[failover] ${name}: ${s.requests} requests, ${s.failures} failed (${statuses}), error window ${s.errorWindowMs} ms${afterText}, slowest ${s.slowestMs} ms${lossText}${refusedText}${describeFirstFailure(run)}`;
}

/**
 * When and how the first failure came, and what it said (a problem document names the failure):
 * a drill that fails only now and then in CI is diagnosed from its line alone.
 */
function describeFirstFailure(run: LoadRun): string {
  let first: LoadOutcome | undefined;
  for (const o of run.outcomes) if (failed(o) && (!first || o.sentAt < first.sentAt)) first = o;
  if (!first) return "";
  const said = (first.error ?? "").replace(/\s+/g, " ").slice(0, 300);
  return `; first failure: ${first.label} sent ${first.sentAt - run.faultAt} ms after the fault, answered ${first.answeredAt - first.sentAt} ms later: ${said}`;
}
