import { ServiceBroker } from "moleculer";
import { checkReadiness, type DatabaseServiceProbes } from "../../shared/observability/readiness";
import { startProgressMiddleware } from "../../shared/observability/start-progress";
import { drainForShutdown, onShutdown } from "../../shared/shutdown";

type Checks = Awaited<ReturnType<DatabaseServiceProbes["readinessChecks"]>>;

/**
 * The fake checks below settle at once or never: one that settles does so before any timer can
 * fire, so a short deadline races nothing, and the hanging one is named sooner.
 */
const readiness = { checkTimeoutMs: 200 };

/** A service that answers the probes as databaseMixin would, with the given state. */
function fakeDatabaseService(name: string, checks: () => Promise<Checks>) {
  return {
    name,
    methods: {
      readinessChecks: checks,
      outboxLag: async () => null,
    },
  };
}

describe("readiness", () => {
  it("when every check passes, then the process is ready and names each check", async () => {
    const broker = new ServiceBroker({ nodeID: "ready-ok", logger: false });
    broker.createService(fakeDatabaseService("crm", async () => ({ database: "ok", migrations: "ok" })));
    await broker.start();
    try {
      expect(await checkReadiness(broker, readiness)).toEqual({
        status: "ok",
        failing: [],
        checks: { broker: "ok", "crm.database": "ok", "crm.migrations": "ok" },
      });
    } finally {
      await broker.stop();
    }
  });

  it("when the broker has not started, then it is not ready yet", async () => {
    const broker = new ServiceBroker({ nodeID: "ready-starting", logger: false });
    const report = await checkReadiness(broker, readiness);
    expect(report).toMatchObject({ status: "unavailable", failing: ["broker"], checks: { broker: "starting" } });
  });

  it("when the services have started but a middleware's start (the channels subscribing) has not ended, then it is still starting", async () => {
    let finishSubscribing!: () => void;
    const subscribing = new Promise<void>((resolve) => (finishSubscribing = resolve));
    let tailReached!: () => void;
    const tail = new Promise<void>((resolve) => (tailReached = resolve));
    // As @moleculer/channels does: its consumers are subscribed in its `started` hook.
    const channelsLike = { name: "ChannelsLike", started: () => (tailReached(), subscribing) };
    const broker = new ServiceBroker({
      nodeID: "ready-tail",
      logger: false,
      middlewares: [channelsLike, startProgressMiddleware()],
    });
    const started = broker.start();
    try {
      await tail;
      expect(broker.started).toBe(true);
      expect(await checkReadiness(broker, readiness)).toMatchObject({
        failing: ["broker"],
        checks: { broker: "starting" },
      });
      finishSubscribing();
      await started;
      expect(await checkReadiness(broker, readiness)).toMatchObject({ status: "ok", checks: { broker: "ok" } });
    } finally {
      finishSubscribing();
      await started.catch(() => undefined);
      await broker.stop();
    }
  });

  it("when a service's migrations are pending and another's database hangs, then both are named", async () => {
    const broker = new ServiceBroker({ nodeID: "ready-failing", logger: false });
    broker.createService(fakeDatabaseService("orders", async () => ({ database: "ok", migrations: "pending" })));
    broker.createService(fakeDatabaseService("crm", () => new Promise<Checks>(() => undefined)));
    await broker.start();
    try {
      const report = await checkReadiness(broker, readiness);
      expect(report.status).toBe("unavailable");
      expect(report.failing.sort()).toEqual(["crm.database", "crm.migrations", "orders.migrations"]);
      expect(report.checks["crm.database"]).toBe("timeout");
    } finally {
      await broker.stop();
    }
  });

  it("when a service with an outbox has failed to publish for long, then its publishing and outbox checks are named", async () => {
    const broker = new ServiceBroker({ nodeID: "ready-stalled", logger: false });
    const orders = fakeDatabaseService("orders", async () => ({ database: "ok", migrations: "ok" }));
    broker.createService({
      ...orders,
      methods: {
        ...orders.methods,
        eventChecks: async () => ({ publishing: "failing for 42 s", outbox: "oldest unpublished event 45 s old" }),
        publishingFailingSeconds: () => 42,
      },
    });
    await broker.start();
    try {
      expect(await checkReadiness(broker, readiness)).toEqual({
        status: "unavailable",
        failing: ["orders.publishing", "orders.outbox"],
        checks: {
          broker: "ok",
          "orders.database": "ok",
          "orders.migrations": "ok",
          "orders.publishing": "failing for 42 s",
          "orders.outbox": "oldest unpublished event 45 s old",
        },
      });
    } finally {
      await broker.stop();
    }
  });

  it("when shutdown begins, then readiness fails at once while the drainers are still running", async () => {
    const broker = new ServiceBroker({ nodeID: "ready-stopping", logger: false });
    await broker.start();
    let finishDrain: () => void = () => undefined;
    onShutdown(broker, () => new Promise<void>((resolve) => (finishDrain = resolve)));
    const draining = drainForShutdown(broker, Date.now() + 5_000);
    try {
      expect(await checkReadiness(broker, readiness)).toMatchObject({
        status: "unavailable",
        failing: ["broker"],
        checks: { broker: "shutting down" },
      });
    } finally {
      finishDrain();
      await draining;
      await broker.stop();
    }
  });
});
