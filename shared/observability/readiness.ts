/**
 * Readiness of one process: it is ready when its broker has started — the channels' consumers
 * subscribed too (start-progress.ts) — and is not shutting down,
 * its transporter is connected (when TRANSPORTER is set), every database service it runs
 * reaches its database with all its migrations applied, and the events of every service with an
 * outbox flow (its publishing has not failed for OUTBOX_STALLED_AFTER, and no event has waited
 * that long). The body names each check, so a 503 says what is not ready.
 */
import type { Service, ServiceBroker } from "moleculer";
import { isShuttingDown } from "../shutdown";
import { startUnderWay } from "./start-progress";

/** "ok", or a short reason it is not. */
export type CheckState = string;

/** What a service made with databaseMixin answers about itself (see shared/database/database.mixin.ts). */
export interface DatabaseServiceProbes {
  readinessChecks(): Promise<{ database: CheckState; migrations: CheckState }>;
  /** Seconds since the oldest unsent outbox event, 0 when none, null when the schema has no outbox. */
  outboxLag(): Promise<number | null>;
}

/** What a service with an outbox relay answers about its events (see shared/messaging/outbox-relay.mixin.ts). */
export interface EventFlowProbes {
  eventChecks(): Promise<{ publishing: CheckState; outbox: CheckState }>;
  /** Seconds its relay's publishing has failed in a row, 0 while it works. */
  publishingFailingSeconds(): number;
}

export interface ReadinessReport {
  status: "ok" | "unavailable";
  /** Names of the checks that are not "ok". */
  failing: string[];
  checks: Record<string, CheckState>;
}

export interface ReadinessOptions {
  /**
   * READINESS_CHECK_TIMEOUT_MS: none of a service's checks (its database, its events) holds a
   * probe longer (an unreachable database can hang for 10 s); past it the database reads "timeout".
   */
  checkTimeoutMs: number;
}

export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function isDatabaseService(service: Service): service is Service & DatabaseServiceProbes {
  const s = service as Partial<DatabaseServiceProbes>;
  return typeof s.readinessChecks === "function" && typeof s.outboxLag === "function";
}

export function hasEventFlow(service: unknown): service is EventFlowProbes {
  const s = service as Partial<EventFlowProbes>;
  return typeof s.eventChecks === "function" && typeof s.publishingFailingSeconds === "function";
}

/** The local services that own a database schema (named like their schema). */
export function databaseServicesOf(broker: ServiceBroker): { name: string; service: DatabaseServiceProbes }[] {
  return broker.services.filter(isDatabaseService).map((service) => ({ name: service.name, service }));
}

function brokerState(broker: ServiceBroker): CheckState {
  if (isShuttingDown(broker) || broker.stopping) return "shutting down";
  return broker.started && !startUnderWay(broker) ? "ok" : "starting";
}

function transporterState(broker: ServiceBroker): CheckState | null {
  const transit = broker.transit;
  if (!transit) return null;
  return transit.connected && transit.tx.connected ? "ok" : "disconnected";
}

async function serviceChecks(
  name: string,
  service: DatabaseServiceProbes,
  { checkTimeoutMs }: ReadinessOptions,
): Promise<Record<string, CheckState>> {
  const [result, events] = await Promise.all([
    withTimeout(
      service.readinessChecks().catch(() => ({ database: "error", migrations: "unknown" })),
      checkTimeoutMs,
      { database: "timeout", migrations: "unknown" },
    ),
    hasEventFlow(service) ? eventChecks(service, checkTimeoutMs) : null,
  ]);
  return {
    [`${name}.database`]: result.database,
    [`${name}.migrations`]: result.migrations,
    ...(events ? { [`${name}.publishing`]: events.publishing, [`${name}.outbox`]: events.outbox } : {}),
  };
}

function eventChecks(
  service: EventFlowProbes,
  checkTimeoutMs: number,
): Promise<{ publishing: CheckState; outbox: CheckState }> {
  const unknown = { publishing: "unknown", outbox: "unknown" };
  return withTimeout(
    service.eventChecks().catch(() => unknown),
    checkTimeoutMs,
    unknown,
  );
}

export async function checkReadiness(broker: ServiceBroker, options: ReadinessOptions): Promise<ReadinessReport> {
  const checks: Record<string, CheckState> = { broker: brokerState(broker) };
  const transporter = transporterState(broker);
  if (transporter !== null) checks.transporter = transporter;
  // While stopping, the database is being closed: say so at once instead of probing it. While
  // starting, the services are migrating: listing migrations then (knex creates its bookkeeping
  // table when missing) races the migration itself and can make the start fail.
  if (checks.broker === "ok") {
    const perService = await Promise.all(
      databaseServicesOf(broker).map(({ name, service }) => serviceChecks(name, service, options)),
    );
    Object.assign(checks, ...perService);
  }
  const failing = Object.entries(checks)
    .filter(([, state]) => state !== "ok")
    .map(([name]) => name);
  return { status: failing.length === 0 ? "ok" : "unavailable", failing, checks };
}
