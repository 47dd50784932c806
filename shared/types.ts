/**
 * Type augmentations for libraries whose typings miss what we use.
 */
import type { Logger, Service } from "moleculer";
import type { Scope } from "./security/auth";

declare module "moleculer" {
  /**
   * @moleculer/channels 0.1.8 types its adapters' logger with moleculer 0.14's name for it,
   * which 0.15 calls Logger.
   */
  type LoggerInstance = Logger;

  interface ActionSchema {
    /** The scope a client needs to call this action through the API (see shared/security/auth.ts). */
    scope?: Scope;
    /** Human summary, used by the OpenAPI document. */
    summary?: string;
    /** The params of each line of a streamed NDJSON body (an import), for the OpenAPI document. */
    lineParams?: Record<string, unknown>;
    /** This action's own time-out, in place of the broker's requestTimeout (0: none); moleculer reads it, its typings miss it. */
    timeout?: number;
  }

  /** @moleculer/channels: a consumer of one channel (see shared/messaging/channels.ts). */
  interface ChannelSchema<TThis = Service> {
    /** Consumer group; defaults to the service name, so replicas share the messages. */
    group?: string;
    /** Messages handled at the same time by the group. */
    maxInFlight?: number;
    maxRetries?: number;
    /** Throwing (or rejecting) leaves the message unacknowledged: it is delivered again. */
    handler(this: TThis, payload: unknown, raw: unknown): Promise<void> | void;
  }

  interface ServiceSchema<TSettings, TMethods, TVars, TThis> {
    /** @moleculer/channels consumers, by channel name. */
    channels?: Record<string, ChannelSchema<TThis>>;
  }

  interface SendToChannelOptions {
    /** JetStream de-duplicates publishes with the same id within its duplicate window. */
    msgID?: string;
    /** Milliseconds JetStream's acknowledgement is awaited before the publish fails (nats.js: 5 s). */
    timeout?: number;
    headers?: Record<string, string>;
  }

  interface ServiceBroker {
    /** Added by the @moleculer/channels middleware: resolves once the message is durably accepted. */
    sendToChannel(channelName: string, payload: unknown, opts?: SendToChannelOptions): Promise<void>;
    /** Added by the same middleware; `connected` once the broker has started it. */
    channelAdapter?: { connected: boolean };
  }
}

export {};
