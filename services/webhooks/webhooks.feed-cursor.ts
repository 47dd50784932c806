/**
 * Where a reader of the events feed is (webhooks.feed.ts): a position `(tx, producer, id)`,
 * spelled as an opaque cursor. Positions compare by transaction id (as a number: xid8 exceeds a
 * double's exact range), then producer name, then outbox row id.
 */
import { FEED_PRODUCERS, type OutboxPosition } from "../../shared/messaging/outbox-feed";
import type { Producer } from "../../shared/messaging/events";

/** A place in the feed: after this row of this producer. */
export interface FeedPosition extends OutboxPosition {
  producer: Producer;
}

/** Before every event: transaction ids start above 0. */
export const FEED_START: FeedPosition = { tx: "0", producer: FEED_PRODUCERS[0], id: 0 };

const CURSOR = /^ev:(0|[1-9][0-9]{0,19})\.([a-z]+)\.(0|[1-9][0-9]{0,15})$/;

export function encodeFeedCursor(p: FeedPosition): string {
  return Buffer.from(`ev:${p.tx}.${p.producer}.${p.id}`).toString("base64url");
}

/** The position a cursor names, or null unless it is exactly what encodeFeedCursor makes. */
export function decodeFeedCursor(cursor: string): FeedPosition | null {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match || !(FEED_PRODUCERS as readonly string[]).includes(match[2])) return null;
  const position: FeedPosition = { tx: match[1], producer: match[2] as Producer, id: Number(match[3]) };
  if (!Number.isSafeInteger(position.id) || BigInt(position.tx) >= 2n ** 64n) return null;
  // base64url decoding skips stray characters and padding: only our own spelling is accepted.
  return encodeFeedCursor(position) === cursor ? position : null;
}

export function comparePositions(a: FeedPosition, b: FeedPosition): number {
  const tx = BigInt(a.tx) - BigInt(b.tx);
  if (tx !== 0n) return tx < 0n ? -1 : 1;
  if (a.producer !== b.producer) return a.producer < b.producer ? -1 : 1;
  return a.id - b.id;
}
