/**
 * Durable broadcast of domain events between services, with @moleculer/channels.
 *
 * - Distributed (TRANSPORTER=nats://...): NATS JetStream on the same server. One stream per
 *   channel, created when the adapter connects, so a relay may publish before any consumer
 *   ever subscribed (the library only creates a stream on subscribe: a publish before that
 *   fails with 503), with the replicas of JETSTREAM_REPLICAS (shared/messaging/jetstream-streams.ts).
 * - Embedded (no transporter): an in-process adapter whose publish resolves only once every
 *   consumer group has handled the message (see channel-adapters.ts).
 *
 * Every consumer group receives every message; the replicas of one service form one group
 * (the service name) and share its messages. The outbox relay re-publishes anything whose
 * publish was not acknowledged, so both adapters are crash-safe; consumers are idempotent.
 */
import { Middleware as ChannelsMiddleware } from "@moleculer/channels";
import type { Middleware } from "moleculer";
import type { Config } from "../config/config";
import { channelOf, EVENTS } from "./events";
import { InProcessAdapter, JetStreamAdapter } from "./channel-adapters";
import { NATS_RECONNECT_WAIT_MS } from "./transporter-connection";

/** Every channel of the event contract (shared/messaging/events.ts), each once. */
export const ALL_CHANNELS: readonly string[] = [...new Set(EVENTS.map(channelOf))];

/**
 * Consumers must never lose a message by giving up on it: a handler that fails (database
 * down...) is retried until it succeeds. The library drops a message after `maxRetries`
 * redeliveries, so the limit is set out of reach.
 */
export const NEVER_GIVE_UP = Number.MAX_SAFE_INTEGER;

const DAY_NS = 24 * 3600 * 1e9;

/** How long JetStream keeps a message: long enough for a consumer down over a long weekend. */
const STREAM_MAX_AGE_NS = 7 * DAY_NS;

/** Redelivery of an unacknowledged message; handlers are short database transactions. */
const ACK_WAIT_NS = 10 * 1e9;

export function channelsMiddleware(cfg: Config): Middleware {
  const adapter = cfg.transporter
    ? new JetStreamAdapter({
        channels: ALL_CHANNELS,
        replicas: cfg.jetstreamReplicas,
        apiTimeoutMs: cfg.jetstreamApiTimeoutMs,
        maxAgeNs: STREAM_MAX_AGE_NS,
        maxRetries: NEVER_GIVE_UP,
        nats: {
          url: cfg.transporter,
          // Keep trying through a NATS restart instead of giving up after ten attempts.
          // noAsyncTraces: nats.js otherwise captures a stack trace and builds a time-out error
          // for every request (each JetStream publish and acknowledgement), whether it fails or
          // not: 2 % of the orders process's CPU under load, for a stack that names nats.js's
          // own frames only (a failure is logged by the relay or the consumer that met it).
          connectionOptions: {
            maxReconnectAttempts: -1,
            reconnectTimeWait: NATS_RECONNECT_WAIT_MS,
            noAsyncTraces: true,
          },
          // Streams of channels the contract does not know (none today) are made by the library.
          streamConfig: { max_age: STREAM_MAX_AGE_NS },
          consumerOptions: {
            // No num_replicas: NATS then keeps a durable consumer on as many replicas as its stream.
            config: {
              // A group that subscribes for the first time also gets what was published before.
              deliver_policy: "all",
              ack_wait: ACK_WAIT_NS,
            },
          },
        },
      })
    : new InProcessAdapter({ maxRetries: NEVER_GIVE_UP });
  // The library's typings mark every option required although each has a default.
  const options = { adapter } as unknown as Parameters<typeof ChannelsMiddleware>[0];
  return ChannelsMiddleware(options);
}
