/**
 * The two @moleculer/channels adapters the project uses (chosen in shared/messaging/channels.ts).
 */
import { Adapters } from "@moleculer/channels";
import { Errors } from "moleculer";
import type { JetStreamPublishOptions, StreamInfo } from "nats";
import { ensureStreams, type ReplicaSetting } from "./jetstream-streams";
import { untilJetStreamSettles } from "./jetstream-settling";

/** What the middleware hands an adapter for each subscribed channel (handler already wrapped). */
type ChannelEntry = Parameters<InstanceType<typeof Adapters.Base>["subscribe"]>[0];
type NatsChannel = Parameters<InstanceType<typeof Adapters.NATS>["subscribe"]>[0];
type Handler = (payload: unknown, raw: unknown) => Promise<unknown>;

interface JetStreamOptions {
  /** Channels whose streams exist from the start, so a publish never meets a missing stream. */
  channels: readonly string[];
  /** JETSTREAM_REPLICAS of each stream (shared/messaging/jetstream-streams.ts); "auto" when not given. */
  replicas?: ReplicaSetting;
  /** JETSTREAM_API_TIMEOUT_MS: how long a JetStream request waits for its answer. */
  apiTimeoutMs: number;
  /** How long a stream keeps a message. */
  maxAgeNs: number;
  maxRetries: number;
  nats: Record<string, unknown>;
}

/** What the relay passes with a publish: JetStream's options; a header or a raw payload takes the library's way. */
type PublishOptions = Partial<JetStreamPublishOptions> & { raw?: boolean; headers?: unknown };

/** NATS's answers to a durable consumer created by someone else between "not found" and "create". */
const CONSUMER_CREATED_MEANWHILE = /consumer name already in use|consumer already exists/i;

/** NATS JetStream, creating the stream of every known channel as soon as it connects. */
export class JetStreamAdapter extends Adapters.NATS {
  private readonly knownChannels: readonly string[];
  private readonly replicas: ReplicaSetting;
  private readonly maxAgeNs: number;
  private readonly apiTimeoutMs: number;
  /** Streams made to match the settings at connect (jetstream-streams.ts), by name. */
  private ensuredStreams = new Map<string, StreamInfo>();

  constructor(opts: JetStreamOptions) {
    super(opts);
    this.knownChannels = opts.channels;
    this.replicas = opts.replicas ?? "auto";
    this.maxAgeNs = opts.maxAgeNs;
    this.apiTimeoutMs = opts.apiTimeoutMs;
  }

  override async connect(): Promise<void> {
    await super.connect();
    // The library takes both with nats.js's own 5 s per request: a replicated stream answers once
    // its nodes agree, which on a busy machine took longer and failed a start.
    this.manager = await this.connection.jetstreamManager({ timeout: this.apiTimeoutMs });
    this.client = this.connection.jetstream({ timeout: this.apiTimeoutMs });
    const specs = this.knownChannels.map((channel) => {
      const subject = this.addPrefixTopic(channel);
      // Same stream name as the library derives when a consumer subscribes.
      return { name: subject.split(".").join("_"), subjects: [subject], maxAgeNs: this.maxAgeNs };
    });
    const log = (line: string) => this.logger.info(line);
    this.ensuredStreams = await untilJetStreamSettles(
      () => ensureStreams(this.manager, specs, this.replicas, this.connection.info ?? {}, log),
      { what: "Making the JetStream streams", log: (line) => this.logger.warn(line), stopping: () => this.stopping },
    );
  }

  /**
   * The library creates a channel's stream again at each subscription, with its own settings
   * only: for a stream made to match ours at connect, NATS answered "already in use with a
   * different configuration", which the library logged as an error at every start.
   */
  override async createStream(
    streamName: string,
    subjects: string[],
    streamOpts: Parameters<InstanceType<typeof Adapters.NATS>["createStream"]>[2],
  ): Promise<StreamInfo> {
    return this.ensuredStreams.get(streamName) ?? super.createStream(streamName, subjects, streamOpts);
  }

  /**
   * The library logs every failed publish as an error with its stack: while NATS was away, a
   * line per event and round (16 MB of logs in 20 s). The relay that publishes logs a summary
   * instead (shared/messaging/outbox-relay-health.ts). And while stopping the library answered
   * as if the message had been stored, which would mark an outbox row sent: here it is refused.
   */
  override async publish(channelName: string, payload: unknown, opts: PublishOptions = {}): Promise<void> {
    if (opts.headers || opts.raw) return super.publish(channelName, payload, opts);
    if (this.stopping || !this.connected)
      throw new Errors.MoleculerRetryableError("The JetStream channel adapter is not connected.");
    await this.client.publish(channelName, this.payloadSerializer.serialize(payload), opts);
  }

  /** The library's serializer, whose type its typings name without declaring it. */
  private get payloadSerializer(): { serialize(payload: unknown): Uint8Array } {
    return (this as unknown as { serializer: { serialize(payload: unknown): Uint8Array } }).serializer;
  }

  /**
   * Subscribing creates the group's durable consumer, or binds to it: sent again while the NATS
   * cluster settles (shared/messaging/jetstream-settling.ts), and when replicas of a service that
   * start together each found it missing and created it: NATS accepts the first and answers the
   * others "consumer name already in use" (each asks for its own deliver subject), and that
   * replica failed to start. The consumer exists by then, so subscribing again binds to it as a
   * replica that starts later does.
   */
  override async subscribe(chan: NatsChannel): Promise<void> {
    await untilJetStreamSettles(() => super.subscribe(chan), {
      what: `Subscribing '${chan.group}' to '${chan.name}'`,
      log: (line) => this.logger.warn(line),
      alsoRetry: (err) =>
        CONSUMER_CREATED_MEANWHILE.test(String((err as Error)?.message))
          ? "to bind to the consumer another replica created at the same moment"
          : null,
      // The failed subscription began tracking the channel's messages; the next one does again.
      beforeRetry: () => this.stopChannelActiveMessages(chan.id),
      stopping: () => this.stopping,
    });
  }

  /**
   * The library drains and then closes, and logs the "already closed" answer of the second
   * call as an error at every shutdown. Draining alone closes the connection.
   */
  override async disconnect(): Promise<void> {
    this.stopping = true;
    const connection = this.connection;
    if (connection && !connection.isClosed()) {
      try {
        await connection.drain();
      } catch (err) {
        this.logger.debug("NATS JetStream connection closed while draining:", (err as Error).message);
        if (!connection.isClosed()) await connection.close();
      }
    }
    this.connected = false;
  }
}

/**
 * In one process (embedded mode): publishing hands the message to one consumer of every group
 * subscribed to the channel and resolves once all of them have handled it, so "published"
 * means "processed" and the outbox relay marks nothing sent that a consumer has not committed.
 * With no consumer subscribed yet (services still starting), the publish fails and the relay
 * tries again later instead of losing the message.
 */
export class InProcessAdapter extends Adapters.Base {
  /** channel name → group → consumers of that group (taken in turn). */
  private readonly consumers = new Map<string, Map<string, ChannelEntry[]>>();
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  private turn = 0;

  constructor(opts: { maxRetries: number }) {
    super(opts);
  }

  override connect(): Promise<void> {
    this.connected = true;
    return Promise.resolve();
  }

  override disconnect(): Promise<void> {
    this.connected = false;
    return Promise.resolve();
  }

  override subscribe(chan: ChannelEntry): Promise<void> {
    const groups = this.consumers.get(chan.name) ?? new Map<string, ChannelEntry[]>();
    groups.set(chan.group, [...(groups.get(chan.group) ?? []), chan]);
    this.consumers.set(chan.name, groups);
    this.inFlight.set(chan.id, new Set());
    return Promise.resolve();
  }

  override async unsubscribe(chan: ChannelEntry): Promise<void> {
    if (chan.unsubscribing) return;
    chan.unsubscribing = true;
    const groups = this.consumers.get(chan.name);
    const rest = (groups?.get(chan.group) ?? []).filter((c) => c.id !== chan.id);
    if (rest.length > 0) groups?.set(chan.group, rest);
    else groups?.delete(chan.group);
    // Let the messages it is handling finish: their publishers are waiting for them.
    await Promise.allSettled([...(this.inFlight.get(chan.id) ?? [])]);
    this.inFlight.delete(chan.id);
  }

  override async publish(channelName: string, payload: unknown): Promise<void> {
    if (!this.connected)
      throw new Errors.MoleculerRetryableError("The in-process channel adapter is not connected yet.");
    const groups = [...(this.consumers.get(channelName)?.values() ?? [])].filter((g) => g.length > 0);
    if (groups.length === 0) {
      throw new Errors.MoleculerRetryableError(
        `No consumer has subscribed to channel "${channelName}" yet.`,
        503,
        "NO_CHANNEL_CONSUMER",
      );
    }
    // Consumers get a copy, as they would from a broker: never the publisher's own object.
    const text = JSON.stringify(payload);
    const results = await Promise.allSettled(
      groups.map((group) => this.handOver(group[this.turn++ % group.length], text)),
    );
    const failure = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failure) throw failure.reason;
  }

  private handOver(chan: ChannelEntry, text: string): Promise<unknown> {
    const handling = (chan.handler as Handler)(JSON.parse(text), { channel: chan.name });
    const active = this.inFlight.get(chan.id);
    active?.add(handling);
    return handling.finally(() => active?.delete(handling));
  }
}
