/**
 * Fan-out: one event from a channel becomes one pending delivery per subscription whose
 * client, by its grants at this moment (webhooks.grants.ts), hears it (webhooks.audience.ts):
 * who listens to the event is known in memory (webhooks.listeners.ts), then the event and its
 * deliveries are stored in one statement (an INSERT … SELECT that keeps only the subscriptions
 * still there and still active). A re-published event adds nothing (unique per event and
 * subscription), so the channel may deliver a message more than once. The deliveries this
 * process's dispatcher has slots for are stored claimed and handed to it, sent at once
 * (webhooks.direct-hand-off.ts); the others wait, due, for any dispatcher's claim.
 */
import Validator from "fastest-validator";
import type { Knex } from "knex";
import type { GroupCommit } from "../../shared/database/group-commit";
import { EVENTS, type DomainEvent } from "../../shared/messaging/events";
import { hears } from "./webhooks.audience";
import type { DirectHandOff } from "./webhooks.direct-hand-off";
import type { ClientGrants } from "./webhooks.grants";
import type { SubscriptionListeners } from "./webhooks.listeners";
import { insertEventDeliveries, type StoredDeliveries } from "./webhooks.deliveries.repository";
import { NO_LINE_WAITS, releaseIfFirstInLine, type LineWaits } from "./webhooks.ordering";

const checkEvent = new Validator().compile({
  id: { type: "string", min: 1, max: 200 },
  event: { type: "enum", values: [...EVENTS] },
  ownerClientId: { type: "number", integer: true },
  entity: { type: "string", min: 1 },
  entityId: { type: "number", integer: true },
  occurredAt: { type: "string", pattern: /^\d{4}-\d\d-\d\dT/ },
  data: { type: "any" },
});

/** The message as a DomainEvent, or null when it is not one (it could never be processed). */
export function asDomainEvent(payload: unknown): DomainEvent | null {
  if (typeof payload !== "object" || payload === null) return null;
  return checkEvent(payload) === true ? (payload as DomainEvent) : null;
}

/** The subscriptions (among these) whose client, by its current grants, hears this event. */
async function entitled<T extends { id: number; client_id: number }>(
  grants: ClientGrants,
  event: DomainEvent,
  candidates: T[],
): Promise<T[]> {
  if (candidates.length === 0) return [];
  const principals = await grants.cached(candidates.map((c) => c.client_id));
  return candidates.filter((c) => hears(principals.get(c.client_id), c.client_id, event));
}

export interface FanOutResult {
  /** New deliveries. */
  created: number;
  /** The endpoints of those left due for a dispatcher to claim (not sent directly), one per delivery. */
  queued: string[];
}

/**
 * Creates the deliveries of one event; those `direct` has slots for are handed to it and sent at
 * once, and it hears of the others (`queued`).
 */
export async function fanOut(
  /** The database, through which the fan-outs that arrive together commit together. */
  writes: GroupCommit,
  grants: ClientGrants,
  listeners: SubscriptionListeners,
  event: DomainEvent,
  direct?: DirectHandOff,
  /** How long a `per_entity` delivery waits for earlier events, and behind earlier deliveries (webhooks.ordering.ts). */
  lineWaits: LineWaits = NO_LINE_WAITS,
): Promise<FanOutResult> {
  // Read before the grants: a change heard after it makes their queued outcomes re-checked (webhooks.late-changes.ts).
  const grantsVersion = grants.version;
  // Most events concern no subscriber: the cached list settles them with no statement at all.
  const hearing = await entitled(grants, event, await listeners.of(event));
  if (hearing.length === 0) return { created: 0, queued: [] };
  const reservation = await direct?.reserve(hearing);
  let stored: StoredDeliveries = { created: 0, claimed: [], behind: [] };
  let handedOver: Promise<void> = Promise.resolve();
  // Stored once, as the exact text every subscriber receives; a subscription deleted or
  // disabled since the read gets nothing.
  const store = (db: Knex) =>
    insertEventDeliveries(
      db,
      event,
      JSON.stringify(event.data),
      hearing.map((s) => s.id),
      {
        subscriptionIds: reservation?.subscriptionIds ?? [],
        leaseMs: direct?.leaseMs ?? 0,
        sendFirst: reservation?.sendFirst ?? false,
        grantsVersion,
      },
      lineWaits,
    );
  try {
    // A per_entity delivery's statement reads its line, and the claims read the lines: its rows
    // must be visible as soon as it is done, not when a group commits (bench:webhooks: grouped,
    // the claims read 1,450 rows per ordered delivery instead of 26).
    stored = await (hearing.some((s) => s.ordering === "per_entity") ? writes.runAlone(store) : writes.run(store));
  } finally {
    handedOver = reservation?.settle(stored.claimed) ?? handedOver;
  }
  // Those stored behind an earlier delivery that settled meanwhile are released now, or they
  // would wait out lineWaits.behindMs: that one's release could not see them (webhooks.ordering.ts).
  const released: Promise<Error | null> =
    stored.behind.length > 0
      ? writes
          .runAlone((db) => releaseIfFirstInLine(db, stored.behind, lineWaits.holdMs))
          .then(
            () => null,
            (err: unknown) =>
              err instanceof Error ? err : new Error(`releasing a per-entity line failed: ${String(err)}`),
          )
      : Promise.resolve(null);
  const claimed = new Set(stored.claimed.map((d) => Number(d.subscription_id)));
  const queued =
    stored.created === stored.claimed.length ? [] : hearing.filter((s) => !claimed.has(s.id)).map((s) => s.endpoint);
  if (queued.length > 0) direct?.queued(queued);
  // Those sent before they were stored exist only in this (unacknowledged) event until written.
  await handedOver;
  // A failed release fails the event as a failed store does, but only now, once nothing handed
  // over depends on it: offered again, it stores nothing new, and the ones behind wait out
  // their time (never their order).
  const releaseFailure = await released;
  if (releaseFailure) throw releaseFailure;
  return { created: stored.created, queued };
}
