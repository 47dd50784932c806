/**
 * The driver's handle on the webhook receiver (webhook-sink.ts), which runs in a process of its
 * own so that receiving never waits for the load driver's event loop (nor the reverse). Its
 * records are read over HTTP between phases, never during the measured work.
 */
import { BenchProcess, dist, freePorts, waitUntilReady } from "./processes";

/** What the receiver recorded, one entry per request, column by column (a compact JSON). */
export interface SinkRecords {
  /** Arrival of the request (its headers), ms since the epoch on the machine's clock. */
  at: number[];
  path: string[];
  /** X-WEBHOOK-EVENT, "" when absent. */
  event: string[];
  /** webhook-id, "" when absent. */
  webhookId: string[];
  /** The `code` of the order in the body, "" when the body had none. */
  code: string[];
}

export interface SinkCount {
  requests: number;
  /** Distinct deliveries: (path, webhook-id) pairs (deliveryKey). */
  distinctIds: number;
}

/**
 * What names one delivery at the receiver: its subscription's path and its webhook-id. The
 * webhook-id is one per event, the same in the deliveries of every subscription (and in the
 * events feed), so it alone counted the ten deliveries of one event as one.
 */
export function deliveryKey(path: string, webhookId: string): string {
  return `${path} ${webhookId}`;
}

export interface ReceivedRequest {
  at: number;
  path: string;
  event: string;
  webhookId: string;
  code: string;
}

/** The receiver's own routes; every other path is a webhook target. */
export const CONTROL_PREFIX = "/_sink/";

const POLL_MS = 100;

/** The receiver's columns as one entry per request. */
function asRequests(r: SinkRecords): ReceivedRequest[] {
  return r.at.map((at, i) => ({ at, path: r.path[i], event: r.event[i], webhookId: r.webhookId[i], code: r.code[i] }));
}

export class WebhookSink {
  /** Where the driver reads and controls the receiver: its first origin. */
  readonly url: string;

  /** @param urls one origin per port, as many as subscribers */
  private constructor(
    readonly process: BenchProcess,
    readonly urls: string[],
  ) {
    this.url = urls[0];
  }

  /** A receiver listening on `origins` ports: each an origin of its own, as separate subscribers are. */
  static async start(origins: number, nodeArgs: string[] = []): Promise<WebhookSink> {
    const ports = await freePorts(origins);
    const sink = BenchProcess.start(
      "receiver",
      dist("bench/webhook-sink.js"),
      process.env,
      ["--ports", ports.join(",")],
      nodeArgs,
    );
    const urls = ports.map((port) => `http://127.0.0.1:${port}`);
    try {
      for (const url of urls) await waitUntilReady(sink, `${url}${CONTROL_PREFIX}count`);
    } catch (err) {
      await sink.stop();
      throw err;
    }
    return new WebhookSink(sink, urls);
  }

  /** The origin at `index` accepts requests and never answers them, until `answerAll`. */
  async hang(index: number): Promise<void> {
    await fetch(`${this.url}${CONTROL_PREFIX}hang/${new URL(this.urls[index]).port}`, { method: "PUT" });
  }

  /** Every origin answers again; the requests left hanging are dropped. */
  async answerAll(): Promise<void> {
    await fetch(`${this.url}${CONTROL_PREFIX}hang`, { method: "DELETE" });
  }

  /** The origin at `index` answers 500 to `percent` % of the requests, at random, from now on. */
  async fail(index: number, percent: number): Promise<void> {
    await fetch(`${this.url}${CONTROL_PREFIX}fail/${new URL(this.urls[index]).port}/${percent}`, { method: "PUT" });
  }

  async count(): Promise<SinkCount> {
    const res = await fetch(`${this.url}${CONTROL_PREFIX}count`);
    return (await res.json()) as SinkCount;
  }

  async records(): Promise<ReceivedRequest[]> {
    return asRequests((await (await fetch(`${this.url}${CONTROL_PREFIX}records`)).json()) as SinkRecords);
  }

  /** The records so far, emptied in the same step: nothing arriving meanwhile is missed. */
  async take(): Promise<ReceivedRequest[]> {
    return asRequests(
      (await (await fetch(`${this.url}${CONTROL_PREFIX}take`, { method: "POST" })).json()) as SinkRecords,
    );
  }

  /** Forgets every record: the next phase starts from nothing. */
  async clear(): Promise<void> {
    await fetch(`${this.url}${CONTROL_PREFIX}records`, { method: "DELETE" });
  }

  /**
   * Waits until `expected` distinct webhook-ids have arrived. Gives up once nothing new arrived
   * for `idleTimeoutMs` (a delivery that failed is retried after 5 s; a lost one never comes):
   * resolves to whether all arrived.
   */
  async waitForDistinct(expected: number, idleTimeoutMs: number): Promise<boolean> {
    let last = -1;
    let lastProgress = Date.now();
    for (;;) {
      const { distinctIds } = await this.count();
      if (distinctIds >= expected) return true;
      if (distinctIds !== last) {
        last = distinctIds;
        lastProgress = Date.now();
      } else if (Date.now() - lastProgress > idleTimeoutMs) {
        return false;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  stop(): Promise<void> {
    return this.process.stop();
  }
}
