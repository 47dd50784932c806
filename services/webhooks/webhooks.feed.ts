/**
 * The events feed (GET /api/v1/events; docs/webhooks.md, "The events feed"): the events a client
 * may receive, by its grants as they are now (webhooks.audience.ts, the rule fan-out applies),
 * read from the producers' outboxes in position order with no gaps (shared/messaging/outbox-feed.ts).
 *
 * One page: the horizon once, then each producer whose events the client hears is asked for its
 * next rows after the cursor and below the horizon, the answers are merged by position
 * `(tx, producer, id)` and cut at `limit`. A producer that had more rows than it answered bounds
 * the page at its last row: a row of another producer after that could come after rows of its
 * not yet read. The cursor is the position of the last event of the page.
 */
import type { Knex } from "knex";
import { DOMAIN_EVENTS, type EventName, type Producer } from "../../shared/messaging/events";
import {
  feedHorizon,
  FEED_ACTION,
  FEED_PRODUCERS,
  type FeedQuery,
  type FeedRow,
  type FeedRows,
  type OutboxPosition,
} from "../../shared/messaging/outbox-feed";
import { MAX_PAGE_BYTES, toPage, withinBytes, type Page } from "../../shared/http/paging";
import type { Audience } from "./webhooks.audience";
import { comparePositions, encodeFeedCursor, type FeedPosition } from "./webhooks.feed-cursor";
import { webhookIdOf } from "./webhooks.message-id";

/** An event of the feed: what a webhook of it carries. */
export interface FeedEvent {
  /** The `webhook-id` every delivery of this event carries. */
  webhookId: string;
  event: EventName;
  createdAt: string;
  /** The webhook body: its JSON is exactly the bytes a delivery of this event sends. */
  body: unknown;
}

/**
 * Where `producer`'s rows start after `cursor`: after the same row when the cursor is in its own
 * outbox, at the same transaction when the producer sorts after the cursor's, at the next one
 * when before (its rows of that transaction were passed).
 */
export function startOf(cursor: FeedPosition, producer: Producer): OutboxPosition {
  if (producer === cursor.producer) return { tx: cursor.tx, id: cursor.id };
  if (producer > cursor.producer) return { tx: cursor.tx, id: 0 };
  return { tx: String(BigInt(cursor.tx) + 1n), id: 0 };
}

// ---- a page -----------------------------------------------------------------------------------

/** Asks one producer for its rows (`<producer>.eventsAfter`). */
export type AskProducer = (producer: Producer, query: FeedQuery) => Promise<FeedRows>;

export interface FeedRequest {
  after: FeedPosition;
  limit: number;
  /** Only this event, when given (the caller checked the client may receive it). */
  event?: EventName;
  clientId: number;
  audience: Audience;
}

type PlacedRow = FeedRow & { producer: Producer };

/** The merged rows of one page, up to `limit`, before any row a producer has not answered yet. */
export function mergeRows(answers: { producer: Producer; answer: FeedRows }[], limit: number): PlacedRow[] {
  const rows = answers.flatMap(({ producer, answer }) => answer.rows.map((r) => ({ ...r, producer })));
  rows.sort(comparePositions);
  const bounds = answers.filter((a) => a.answer.more && a.answer.rows.length > 0);
  const lastOf = (a: (typeof bounds)[number]): PlacedRow => ({ ...a.answer.rows.at(-1)!, producer: a.producer });
  const bound = bounds.map(lastOf).sort(comparePositions)[0];
  return (bound ? rows.filter((r) => comparePositions(r, bound) <= 0) : rows).slice(0, limit);
}

export async function readFeed(db: Knex, ask: AskProducer, req: FeedRequest): Promise<Page<FeedEvent>> {
  const keep = (events: EventName[]) => events.filter((e) => !req.event || e === req.event);
  const ownEvents = keep(req.audience.events);
  const everyOwnerEvents = keep(req.audience.everyClientEvents);
  const producers = FEED_PRODUCERS.filter((p) => ownEvents.some((e) => DOMAIN_EVENTS[e].producer === p));
  const horizon = await feedHorizon(db);
  const answers = await Promise.all(
    producers.map(async (producer) => ({
      producer,
      answer: await ask(producer, {
        after: startOf(req.after, producer),
        below: horizon,
        ownEvents: ownEvents.filter((e) => DOMAIN_EVENTS[e].producer === producer),
        ownerClientId: req.clientId,
        everyOwnerEvents: everyOwnerEvents.filter((e) => DOMAIN_EVENTS[e].producer === producer),
        limit: req.limit,
      }),
    })),
  );
  const rows = mergeRows(answers, req.limit);
  const events = withinBytes(rows.map(presentFeedEvent), MAX_PAGE_BYTES);
  const last = events.length > 0 ? rows[events.length - 1] : undefined;
  // A feed has no last page: the next one starts after what was read, or where this one did.
  const next: FeedPosition = last ? { tx: last.tx, producer: last.producer, id: last.id } : req.after;
  return { ...toPage(events, encodeFeedCursor(next)), cursorParam: "after" };
}

function presentFeedEvent(r: PlacedRow): FeedEvent {
  // The event id and time the relay gives the event (shared/messaging/outbox.ts toDomainEvent), so
  // the webhook-id is the deliveries' own.
  return {
    webhookId: webhookIdOf({ id: `${r.producer}-${r.id}`, occurredAt: r.createdAt }),
    event: r.event,
    createdAt: r.createdAt,
    body: r.data,
  };
}

/** The producer action's name. */
export const feedActionOf = (producer: Producer): string => `${producer}.${FEED_ACTION}`;
