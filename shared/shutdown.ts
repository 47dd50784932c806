/**
 * The first phase of stopping a process, before the broker stops: readiness turns 503 at once,
 * then every registered drainer (the gateway's HTTP server: stop accepting, finish in-flight
 * requests) runs against one deadline. The broker's own stop (moleculer `tracking`) then waits
 * for the in-flight action calls and event handlers that remain.
 */
import type { ServiceBroker } from "moleculer";

/** Stops taking new work and finishes what is in flight, by `deadline` (epoch ms) at the latest. */
export type Drainer = (deadline: number) => Promise<void>;

const drainers = new WeakMap<ServiceBroker, Set<Drainer>>();
const shuttingDown = new WeakSet<ServiceBroker>();

/** Registers work to drain when the broker's process shuts down; returns the unregister. */
export function onShutdown(broker: ServiceBroker, drainer: Drainer): () => void {
  let set = drainers.get(broker);
  if (!set) {
    set = new Set();
    drainers.set(broker, set);
  }
  set.add(drainer);
  return () => set.delete(drainer);
}

/** True from the moment shutdown begins: /readyz answers 503. */
export function isShuttingDown(broker: ServiceBroker): boolean {
  return shuttingDown.has(broker);
}

/** Marks the broker as shutting down and runs every drainer until it is done or `deadline`. */
export async function drainForShutdown(broker: ServiceBroker, deadline: number): Promise<void> {
  shuttingDown.add(broker);
  const pending = [...(drainers.get(broker) ?? [])].map((drain) =>
    drain(deadline).catch((err: unknown) => broker.logger.error({ err }, "draining failed")),
  );
  await Promise.all(pending);
}
