/**
 * Whether a broker's start has finished, which `broker.started` does not say.
 *
 * moleculer 0.15 sets `broker.started` once the services' `started` handlers ran, and then runs
 * the middlewares' `started` hooks: @moleculer/channels connects to JetStream and subscribes
 * every consumer there, which on a replicated NATS cluster under load took over 30 s. /readyz
 * answered 200 meanwhile, so an orchestrator (or a test) counted a process whose consumers were
 * not subscribed yet as ready, and a failure in that tail then ended a "ready" process. A broker
 * given this middleware, last of all, is starting until every middleware's hook has run.
 */
import type { Middleware, ServiceBroker } from "moleculer";

const underWay = new WeakSet<ServiceBroker>();

/** Last in the broker's middlewares: the hooks run in order, each awaited. */
export function startProgressMiddleware(): Middleware {
  return {
    name: "StartProgress",
    starting(broker: ServiceBroker) {
      underWay.add(broker);
    },
    started(broker: ServiceBroker) {
      underWay.delete(broker);
    },
  } as Middleware;
}

/** True from the start's first step until its last middleware hook has run (a start that failed stays so). */
export function startUnderWay(broker: ServiceBroker): boolean {
  return underWay.has(broker);
}
