/**
 * The load itself: autocannon posting the partner's three-item order over `connections`
 * keep-alive connections for some seconds. The caller runs it twice: an unmeasured warm-up
 * (JIT, connection pools, caches), then the measured run. With `--preload`, also pages of the
 * partner's orders read the same way.
 */
import autocannon from "autocannon";
import { batchPayloadTemplate, orderPayloadTemplate } from "./order-payload";
import type { SeededPartner } from "./seed";

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
}

export interface LoadFigures {
  requestsPerSecond: { mean: number; stddev: number; min: number; max: number };
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  durationSeconds: number;
  /** Responses in each second of the run, in order: a stall shows as a dip. */
  perSecond: number[];
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

function figuresOf(r: autocannon.Result, perSecond: number[]): LoadFigures {
  return {
    requestsPerSecond: {
      mean: round(r.requests.average),
      stddev: round(r.requests.stddev),
      min: r.requests.min,
      max: r.requests.max,
    },
    latencyMs: {
      mean: round(r.latency.average, 2),
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
    },
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, { count }]) => [code, count])),
    durationSeconds: round(r.duration, 2),
    perSecond,
  };
}

export function postOrders(
  baseUrl: string,
  partner: SeededPartner,
  connections: number,
  seconds: number,
): Promise<LoadFigures> {
  return drive({
    url: `${baseUrl}/api/v1/orders`,
    method: "POST",
    headers: { Authorization: `Bearer ${partner.apiKey}`, "Content-Type": "application/json" },
    body: orderPayloadTemplate(partner.references),
    idReplacement: true,
    connections,
    duration: seconds,
  });
}

/** POST /api/v1/orders/batch with `size` orders a request (the bench's order, each its own externalId). */
export function postBatches(
  baseUrl: string,
  partner: SeededPartner,
  connections: number,
  seconds: number,
  size: number,
): Promise<LoadFigures> {
  return drive({
    url: `${baseUrl}/api/v1/orders/batch`,
    method: "POST",
    headers: { Authorization: `Bearer ${partner.apiKey}`, "Content-Type": "application/json" },
    body: batchPayloadTemplate(partner.references, size),
    idReplacement: true,
    connections,
    duration: seconds,
  });
}

/** `GET /api/v1/orders?limit=…[&cursor=…]`: one page of the partner's orders, over and over. */
export function getOrdersPage(
  baseUrl: string,
  partner: SeededPartner,
  query: string,
  connections: number,
  seconds: number,
): Promise<LoadFigures> {
  return drive({
    url: `${baseUrl}/api/v1/orders?${query}`,
    headers: { Authorization: `Bearer ${partner.apiKey}` },
    connections,
    duration: seconds,
  });
}

async function drive(options: autocannon.Options): Promise<LoadFigures> {
  const run = autocannon(options);
  const perSecond: number[] = [];
  const started = Date.now();
  run.on("response", () => {
    const second = Math.floor((Date.now() - started) / 1000);
    perSecond[second] = (perSecond[second] ?? 0) + 1;
  });
  const result = await run;
  return figuresOf(
    result,
    Array.from(perSecond, (n) => n ?? 0),
  );
}
