/**
 * The NATS status watcher (shared/messaging/transporter-connection.ts): the transporter's "connected" flag
 * follows what nats.js reports, with a fake client whose status events the test sends.
 */
import type { ServiceBroker } from "moleculer";
import { transporterConnectionMiddleware } from "../../shared/messaging/transporter-connection";

/** A nats.js status stream the test feeds, one event at a time. */
class StatusFeed implements AsyncIterable<{ type: string }> {
  private readonly queued: { type: string }[] = [];
  private wake: (() => void) | null = null;
  private ended = false;

  send(type: string): void {
    this.queued.push({ type });
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<{ type: string }> {
    while (true) {
      while (this.queued.length > 0) yield this.queued.shift()!;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

function fakeBroker(client?: { status(): AsyncIterable<{ type: string }> }) {
  const logged: string[] = [];
  const tx = { connected: true, client };
  // pino's calling convention: an optional object first, the message last.
  const log =
    (level: string) =>
    (...args: unknown[]) =>
      void logged.push(`${level}: ${String(args.at(-1))}`);
  const announced: string[] = [];
  const discoverer = {
    sendLocalNodeInfo: async () => void announced.push("INFO"),
    discoverAllNodes: async () => void announced.push("DISCOVER"),
  };
  const broker = {
    transit: { tx },
    registry: { discoverer },
    logger: { warn: log("warn"), info: log("info"), error: log("error") },
  } as unknown as ServiceBroker;
  return { broker, tx, logged, announced };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

async function start(broker: ServiceBroker): Promise<void> {
  await (transporterConnectionMiddleware.started as (b: ServiceBroker) => Promise<void>)(broker);
}

describe("the NATS status watcher", () => {
  it("when nats.js reports a disconnection, then the transporter is disconnected at once, and connected again on reconnection", async () => {
    const feed = new StatusFeed();
    const { broker, tx, logged } = fakeBroker({ status: () => feed });
    await start(broker);

    feed.send("disconnect");
    await settle();
    expect(tx.connected).toBe(false);

    // nats.js retries meanwhile: nothing changes until it is back.
    feed.send("reconnecting");
    feed.send("pingTimer");
    await settle();
    expect(tx.connected).toBe(false);

    feed.send("reconnect");
    await settle();
    expect(tx.connected).toBe(true);
    expect(logged).toEqual([expect.stringMatching(/^warn: NATS connection lost/), "info: NATS connection back"]);
    feed.end();
  });

  it("when NATS is back, then this node announces itself and asks every node to, as moleculer does after a reconnect", async () => {
    const feed = new StatusFeed();
    const { broker, announced } = fakeBroker({ status: () => feed });
    await start(broker);
    feed.send("disconnect");
    await settle();
    // Nothing to send while NATS is away: the registry is rebuilt once it is back.
    expect(announced).toEqual([]);
    feed.send("reconnect");
    await settle();
    await settle();
    expect(announced).toEqual(["INFO", "DISCOVER"]);
    feed.end();
  });

  it("when the same status repeats, then it is logged once", async () => {
    const feed = new StatusFeed();
    const { broker, tx, logged } = fakeBroker({ status: () => feed });
    await start(broker);
    for (const type of ["disconnect", "disconnect", "reconnect", "reconnect"]) feed.send(type);
    await settle();
    expect(tx.connected).toBe(true);
    expect(logged).toHaveLength(2);
    feed.end();
  });

  it("when the broker has no NATS client (embedded mode, or another transporter), then nothing is watched", async () => {
    const { broker, tx, logged } = fakeBroker(undefined);
    await start(broker);
    expect(tx.connected).toBe(true);
    expect(logged).toEqual([]);
  });

  it("when the status stream fails, then the failure is logged, not thrown", async () => {
    const failing = {
      status: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error("closed")) }) }),
    };
    const { broker, logged } = fakeBroker(failing);
    await start(broker);
    await settle();
    expect(logged).toEqual(["error: following the NATS status failed"]);
  });
});
