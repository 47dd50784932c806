/**
 * The webhooks benchmark's command line. The defaults are the protocol: 10 subscriptions
 * (10 receiver origins), 2,000 validated orders in a burst (20,000 deliveries), then 1,000 at a
 * steady 200 per second, then 500 at 50 per second with every subscriber healthy and 500 more
 * with one of them hanging, 400 orders changing five times each delivered without and then with
 * per-entity order (webhooks-ordering.ts), two webhooks processes; smaller runs are for trying it out and write
 * nothing unless asked.
 *
 *   node dist/bench/webhooks.bench.js [--subscriptions 10] [--orders 2000] [--connections 50]
 *     [--steady-rate 200] [--steady-orders 1000] [--calm-rate 50] [--calm-orders 500]
 *     [--warmup-orders 4000] [--baseline-warmup 4000] [--ordered-orders 400] [--webhooks-processes 2]
 *     [--preload 0] [--postgres URL] [--nats URL] [--no-write] [--cpu-prof]
 *
 * The warm-ups are long on purpose: a service runs for days, so its cost per delivery is that of
 * code V8 has finished optimising. After 200 validations the burst still paid for TurboFan's
 * compiling (bench/README.md, issue 23, "The burst measured V8 warming up").
 */
import { parseArgs } from "node:util";
import { LOOPBACK, positiveInteger, serverUrls } from "./options";

export interface WebhooksBenchOptions {
  subscriptions: number;
  /** Orders validated in the burst. */
  burstOrders: number;
  /** Validations in flight during the burst. */
  connections: number;
  steadyRate: number;
  steadyOrders: number;
  /** The noisy-neighbour pair of phases: validations per second, and how many, in each. */
  calmRate: number;
  calmOrders: number;
  /** Settled deliveries written with SQL before the measured phases (0: an empty database). */
  preload: number;
  /** Validated (and delivered) before the burst, unmeasured: JIT, pools, connections. */
  warmupOrders: number;
  /** Requests each baseline sender sends before its measured ones, unmeasured: the same for the bare loop. */
  baselineWarmup: number;
  /** Orders of EVENTS_PER_ORDER changes in each of the unordered and per_entity phases. */
  orderedOrders: number;
  webhooksProcesses: number;
  postgresUrl: string;
  natsUrl: string;
  write: boolean;
  cpuProfile: boolean;
}

export function parseWebhooksOptions(argv: string[]): WebhooksBenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      subscriptions: { type: "string", default: "10" },
      orders: { type: "string", default: "2000" },
      connections: { type: "string", default: "50" },
      "steady-rate": { type: "string", default: "200" },
      "steady-orders": { type: "string", default: "1000" },
      "calm-rate": { type: "string", default: "50" },
      "calm-orders": { type: "string", default: "500" },
      preload: { type: "string", default: "0" },
      "warmup-orders": { type: "string", default: "4000" },
      "baseline-warmup": { type: "string", default: "4000" },
      "ordered-orders": { type: "string", default: "400" },
      "webhooks-processes": { type: "string", default: "2" },
      postgres: { type: "string", default: `postgres://postgres@${LOOPBACK}:5432/postgres` },
      nats: { type: "string", default: `nats://${LOOPBACK}:4222` },
      "no-write": { type: "boolean", default: false },
      "cpu-prof": { type: "boolean", default: false },
    },
    strict: true,
  });
  return {
    subscriptions: positiveInteger("subscriptions", values.subscriptions, 1),
    burstOrders: positiveInteger("orders", values.orders, 1),
    connections: positiveInteger("connections", values.connections, 1),
    steadyRate: positiveInteger("steady-rate", values["steady-rate"], 1),
    steadyOrders: positiveInteger("steady-orders", values["steady-orders"], 1),
    calmRate: positiveInteger("calm-rate", values["calm-rate"], 1),
    calmOrders: positiveInteger("calm-orders", values["calm-orders"], 1),
    preload: positiveInteger("preload", values.preload, 0),
    warmupOrders: positiveInteger("warmup-orders", values["warmup-orders"], 1),
    baselineWarmup: positiveInteger("baseline-warmup", values["baseline-warmup"], 0),
    orderedOrders: positiveInteger("ordered-orders", values["ordered-orders"], 1),
    webhooksProcesses: positiveInteger("webhooks-processes", values["webhooks-processes"], 1),
    ...serverUrls(values),
    // Profiled figures are slower than real ones: a profiled run writes nothing.
    write: !values["no-write"] && !values["cpu-prof"],
    cpuProfile: values["cpu-prof"],
  };
}
