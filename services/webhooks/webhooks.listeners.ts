/**
 * Who listens to each event: the active subscriptions to an event name, kept in memory by each
 * webhooks process, so that fan-out of an event nobody subscribed to costs no query at all (most
 * events: issue 23 measured 0.64 ms of webhooks CPU per unheard order, a query each).
 *
 * Kept fresh by whoever changes a subscription: the process that creates, enables, moves,
 * disables or deletes one forgets before it answers, and broadcasts `webhooks.subscriptionsChanged`
 * so that the other replicas forget too. The broadcast leaves before the answer, and an event can
 * only be committed after the answer, then relayed through the outbox and JetStream: in practice
 * every replica has forgotten by the time the event reaches it. A lost broadcast costs freshness,
 * bounded: an entry expires LISTENERS_TTL_MS after it was read, so a new or enabled subscription
 * hears every event committed that long after its creation was answered, whatever happens to the
 * broadcast. A stale entry never makes a deleted or disabled subscription receive anything: the
 * insert of the deliveries keeps only the subscriptions still active (webhooks.deliveries.repository.ts).
 */
import type { Knex } from "knex";
import type { Context, LoggerInstance } from "moleculer";
import { ExpiringCache } from "../../shared/expiring-cache";
import { announce } from "../../shared/messaging/announce";
import { BROADCASTS, EVENTS, type DomainEvent, type EventName } from "../../shared/messaging/events";
import {
  candidateSubscriptions,
  listeningSubscriptions,
  type CandidateSubscription,
  type ListeningSubscription,
} from "./webhooks.subscriptions.repository";

/** How stale a replica's list may be when a broadcast is lost: as short as the grants' (webhooks.grants.ts). */
export const LISTENERS_TTL_MS = 1_000;

/** `occurredAt` as the relay writes it (ISO 8601 with its zone): compared in memory; anything else asks the database. */
const ZONED_TIME = /(Z|[+-]\d\d:?\d\d)$/;

export class SubscriptionListeners {
  private readonly cache = new ExpiringCache<EventName, ListeningSubscription[]>(LISTENERS_TTL_MS, EVENTS.length);

  constructor(private readonly db: Knex) {}

  /**
   * The subscriptions that may receive this event: to its name, active, and created before it
   * happened (at the millisecond, as `candidateSubscriptions`, which it stands for).
   */
  async of(e: DomainEvent): Promise<CandidateSubscription[]> {
    const at = ZONED_TIME.test(e.occurredAt) ? Date.parse(e.occurredAt) : NaN;
    if (Number.isNaN(at)) return candidateSubscriptions(this.db, e);
    const all = await this.cache.getOrLoad(e.event, () => listeningSubscriptions(this.db, e.event));
    if (all.length === 0) return [];
    return all
      .filter((s) => s.created_ms <= at)
      .map(({ id, client_id, endpoint, ordering }) => ({ id, client_id, endpoint, ordering }));
  }

  /** Every list is read again: a subscription changed (here, or in another process). */
  forget(): void {
    this.cache.clear();
  }
}

/** What announcing a subscription change needs of the service. */
export interface SubscriptionsChangeSource {
  listeners: SubscriptionListeners;
  broker: Pick<Context, "broadcast">;
  logger: Pick<LoggerInstance, "warn">;
}

/**
 * After a committed change to a subscription's event, status or URL, and before answering: this
 * process forgets at once, the other replicas when the broadcast reaches them (awaited, so that
 * it has left before the answer; a failed one is only logged, entries expire on their own).
 */
export async function subscriptionsChanged(service: SubscriptionsChangeSource): Promise<void> {
  service.listeners.forget();
  await announce(service.broker, BROADCASTS.subscriptionsChanged.name, {}, service.logger);
}
