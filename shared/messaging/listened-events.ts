/**
 * Which event names some active webhook subscription listens to, as the outbox relays see it:
 * an event nobody listens to is settled without being published (outbox-relay.mixin.ts). Most
 * events are such (issue 23: an unheard order cost the webhooks process a JetStream message, its
 * decoding and its acknowledgement, 0.19 ms of CPU, and NATS and the relay their share), and the
 * webhooks fan-out is the channels' only consumer (shared/messaging/channels.ts).
 *
 * The names come from the webhooks service (LISTENED_EVENTS_ACTION), kept LISTENED_EVENTS_TTL_MS
 * and forgotten on `webhooks.subscriptionsChanged`, which the process that creates, enables or
 * moves a subscription broadcasts before it answers: an event committed after that answer finds
 * the list forgotten, in practice. The bound, whatever happens to the broadcast, is the fan-out's
 * own (services/webhooks/webhooks.listeners.ts): a new subscription hears every event committed
 * LISTENED_EVENTS_TTL_MS after its creation was answered. When the webhooks service does not
 * answer, every event is taken as heard and published, as before: nothing is settled unheard on
 * a guess.
 */
import type { DomainEvent } from "./events";
import { ExpiringCache } from "../expiring-cache";

/** The webhooks action that names the listened events (an array of event names). */
export const LISTENED_EVENTS_ACTION = "webhooks.listenedEvents";

/** As short as the fan-out's list of listeners (services/webhooks/webhooks.listeners.ts LISTENERS_TTL_MS). */
export const LISTENED_EVENTS_TTL_MS = 1_000;

/** Asks the webhooks service; rejects when it does not answer. */
export type ListenedEventsSource = () => Promise<readonly string[]>;

const ALL = "all";

export class ListenedEvents {
  /** One entry: the listened names, or null when the webhooks service did not answer (all heard). */
  private readonly cache = new ExpiringCache<typeof ALL, ReadonlySet<string> | null>(LISTENED_EVENTS_TTL_MS, 1);

  constructor(private readonly source: ListenedEventsSource) {}

  /** The events of `events` that nobody listens to; none when that cannot be known. */
  async unheard(events: readonly DomainEvent[]): Promise<DomainEvent[]> {
    if (events.length === 0) return [];
    const names = await this.cache.getOrLoad(ALL, () =>
      this.source().then(
        (list) => new Set(list),
        () => null,
      ),
    );
    return names === null ? [] : events.filter((e) => !names.has(e.event));
  }

  /** A subscription changed: ask again before the next event is settled. */
  forget(): void {
    this.cache.clear();
  }
}
