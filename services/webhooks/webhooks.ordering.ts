/**
 * Per-entity order (docs/webhooks.md, "Order"): what puts a delivery in line and what holds it
 * there, as SQL the claim (webhooks.deliveries.repository.ts `claimDue`) and the fan-out's
 * direct hand-off (`insertEventDeliveries`) both ask. It is a property of the claim, not a lock
 * held while sending: a delivery in line is not claimed while an earlier one of its line is
 * unsettled (pending: due, retrying, or being sent), so nothing is ever waited for in memory.
 *
 * - **The line** of a delivery: the deliveries about the same entity to the `per_entity`
 *   subscriptions of the same client and URL. A subscription carries one event, so a receiver of
 *   `sales_order_validated` and `sales_order_cancelled` has two subscriptions on one URL; the
 *   line orders an order's validation before its cancellation across them.
 * - **Earlier** means a smaller sequence: the number of the event's id (`<schema>-<outbox id>`).
 *   A producer writes an entity's event in the transaction that changes the entity, after the
 *   change locked its row (orders.lifecycle.ts: the UPDATE of the order, then the outbox insert;
 *   orders.repository.ts: the order and its first event in one statement), so of one entity's
 *   events the later commit takes the larger outbox id: per entity, the sequence is commit order.
 * - **Settled**: anything but `pending` — succeeded, failed (its retries exhausted, or 410),
 *   refused, cancelled (a disabled subscription's queue, a lost grant): it leaves its line (its
 *   sequence is cleared, so deliveries_in_line holds only the unsettled) and releases the next.
 * - A redelivered or recovered delivery leaves its line too: sent again on request, it neither
 *   waits for nor holds up the others.
 * - Events reach the fan-out on one channel per event name, from several processes, so an
 *   entity's later event may be stored first. A `per_entity` delivery is first due
 *   WEBHOOK_ORDERING_HOLD after its event happened (never stored claimed before), so an earlier
 *   event stored meanwhile goes first; one stored later than that (the broker was down, a crashed
 *   process's message offered again) is sent when it comes, after the later ones.
 * - A claim reads the due deliveries it skips, so those behind an unsettled one are not left
 *   due: one stored behind an unsettled earlier delivery waits up to LineWaits.behindMs (a
 *   dispatcher's lease, in which a delivery being sent settles), or until that one's retry
 *   (`dueBehindEarlier`); those behind one whose failure schedules a retry are deferred to it
 *   (`deferBehindRetries`). When a delivery settles, the next of its line is released
 *   (`releaseNextOf`: due at once, its own hold passed), and when one leaves its line early
 *   (redelivered, cancelled) the rest of the line is (`undeferLines`). Deferring only ever
 *   costs time, never order: the claim's check alone decides what may go.
 * - A release is never missed. A delivery stored behind an unsettled one and that one settling
 *   are two statements which cannot see each other while both run, so each side looks again
 *   once it has committed, in a statement of its own: the settled one releases the next of its
 *   line (`releaseNextOf`), the stored one releases itself if nothing unsettled is left before
 *   it (`releaseIfFirstInLine`). Whichever commits last sees the other's commit. Done inside
 *   their own statements, a next one stored while the earlier settled waited out behindMs
 *   (bench:webhooks' per_entity phase on a PostgreSQL that flushes its WAL: its last delivery
 *   arrived 12 s after the rest). A release that PostgreSQL ends to break a deadlock (another
 *   release locking the same waiting deliveries in another order) is sent again
 *   (againAfterDeadlock, shared/database/database-errors.ts): it runs outside any transaction
 *   and may run twice.
 */
import type { Db } from "../../shared/database/db";
import { againAfterDeadlock } from "../../shared/database/database-errors";
import { prepared } from "../../shared/database/prepared-statement";
import type { DomainEvent } from "../../shared/messaging/events";
import { deliveriesByIds } from "./webhooks.deliveries-by-id";
import { DELIVERY_STATUSES } from "./webhooks.params";

/** Where a delivery stands in its line: the entity's key and the event's sequence; null for none (a test event). */
export interface LinePlace {
  entityKey: string;
  sequence: string;
}

/** The event's place in its entity's line, or null when its id carries no sequence. */
export function linePlaceOf(e: Pick<DomainEvent, "id" | "entity" | "entityId">): LinePlace | null {
  const sequence = /-(\d{1,18})$/.exec(e.id)?.[1];
  return sequence === undefined ? null : { entityKey: `${e.entity}:${e.entityId}`, sequence };
}

/** SQL expressions naming a delivery's place and its subscription's client and URL. */
export interface LineRefs {
  entityKey: string;
  /** null: from the start of the line (the first unsettled delivery of the entity). */
  sequence: string | null;
  clientId: string;
  url: string;
}

/** Every status but `pending`. */
const SETTLED = DELIVERY_STATUSES.filter((status) => status !== "pending");

/**
 * Delivery `alias` is in its line: its sequence is set (a delivery that settles, is redelivered
 * or is recovered leaves its line: its sequence is cleared) and it is not settled — which only a
 * process of an earlier version, which kept a settled delivery's sequence, can have left behind.
 * Said as "none of the settled statuses", not `= 'pending'`: that would let the planner answer
 * the probe from a partial index of pending deliveries (deliveries_due_by_subscription), walking
 * all of a subscription's pending deliveries whenever its statistics say there are few, where
 * deliveries_in_line (`WHERE sequence IS NOT NULL`) answers it in one step (bench:webhooks'
 * per_entity phase: 730 rows read per probe).
 */
export function inLine(alias: string): string {
  const settled = SETTLED.map((status) => `'${status}'`);
  return `${alias}.sequence IS NOT NULL AND ${alias}.status NOT IN (${settled.join(", ")})`;
}

/**
 * The unsettled deliveries of a delivery's line nearest to it, before (`<`) or after (`>`), one
 * per subscription of the line, as `alias` (id, sequence, claim_token, next_attempt_at): FROM and
 * WHERE. Each is one step along deliveries_in_line from the delivery's place (the index's order,
 * LIMIT 1), a plan that does not hang on the table's statistics. Written as a join of the line's
 * deliveries, the probe was planned from stale ones — all deliveries unordered at the last
 * ANALYZE, or a table still small — into a walk of every unsettled delivery of the table, on
 * every probe: bench:webhooks' per_entity phase, 60 ms per claim and 75 rows read per delivery.
 */
function nearestInLine(r: LineRefs, alias: string, side: "<" | ">"): string {
  const bound = r.sequence === null ? "" : `AND ${alias}.sequence ${side} ${r.sequence}`;
  return `FROM webhooks.subscriptions line
     CROSS JOIN LATERAL (
       SELECT ${alias}.id, ${alias}.sequence, ${alias}.claim_token, ${alias}.next_attempt_at FROM webhooks.deliveries ${alias}
        WHERE ${alias}.subscription_id = line.id AND ${alias}.entity_key = ${r.entityKey} ${bound}
          AND ${inLine(alias)}
        ORDER BY ${alias}.sequence ${side === "<" ? "DESC" : "ASC"} LIMIT 1) ${alias}
     WHERE line.client_id = ${r.clientId} AND line.url = ${r.url} AND line.ordering = 'per_entity'`;
}

/**
 * True when an earlier delivery of the same line is unsettled: one probe of deliveries_in_line
 * per `per_entity` subscription of the client on that URL (a handful), whatever the backlog.
 */
export function earlierUnsettled(r: LineRefs): string {
  return `EXISTS (SELECT 1 ${nearestInLine(r, "earlier", "<")})`;
}

/** How long a `per_entity` delivery waits, in milliseconds. */
export interface LineWaits {
  /** WEBHOOK_ORDERING_HOLD: after its event happened, for earlier events still on their way. */
  holdMs: number;
  /**
   * At most, behind an unsettled earlier delivery of its line (released sooner when that one
   * settles: `releaseNextOf`): a dispatcher's lease, within which a delivery being sent settles.
   * 0: due as soon as held, and read by every claim until its turn.
   */
  behindMs: number;
}

export const NO_LINE_WAITS: LineWaits = { holdMs: 0, behindMs: 0 };

/**
 * When an earlier delivery of the line is unsettled, the earliest a later one may be due: not
 * before `behindMs` (an SQL expression, milliseconds) from now, nor before the retry the nearest
 * earlier ones wait for (a line's deliveries behind a retrying one wait for that retry too:
 * `deferBehindRetries`); else null. A later delivery cannot go before them, so it is stored due
 * then rather than read by every claim until its turn, and the one before it releases it when
 * it settles (`releaseNextOf`).
 */
export function dueBehindEarlier(r: LineRefs, behindMs: string): string {
  return `(SELECT greatest(now() + ${behindMs} * interval '1 millisecond',
                  max(earlier.next_attempt_at) FILTER (WHERE earlier.claim_token IS NULL AND earlier.next_attempt_at > now()))
       ${nearestInLine(r, "earlier", "<")} HAVING count(*) > 0)`;
}

/**
 * The deliveries in line behind each row of `left` (subscription_id, entity_key, sequence —
 * null: all of its entity's), not claimed and due before `dueBefore`, as (id, left's row `u`):
 * from `left` outwards, one probe of deliveries_in_line per subscription of the line, so the
 * planner never walks every unsettled delivery to join them.
 */
function behind(left: string, where: string, dueBefore: string): string {
  return `SELECT b.id, u.next_attempt_at AS until
      FROM ${left} u
      JOIN webhooks.subscriptions s ON s.id = u.subscription_id
      JOIN webhooks.subscriptions line ON line.client_id = s.client_id AND line.url = s.url AND line.ordering = 'per_entity'
      CROSS JOIN LATERAL (
        SELECT b.id FROM webhooks.deliveries b
         WHERE b.subscription_id = line.id AND b.entity_key = u.entity_key AND (u.sequence IS NULL OR b.sequence > u.sequence)
           AND ${inLine("b")} AND b.claim_token IS NULL
           AND b.next_attempt_at < ${dueBefore}
         -- In the index's order: a subquery the planner runs per line subscription along
         -- deliveries_in_line, never flattened into a join it could plan from stale statistics
         -- (nearestInLine).
         ORDER BY b.sequence) b
     WHERE u.entity_key IS NOT NULL AND ${where}`;
}

/**
 * A data-modifying CTE for the statement that records attempts: the deliveries in line behind
 * one that `updated` (its RETURNING: subscription_id, entity_key, sequence, status,
 * next_attempt_at) left waiting for a retry are due no sooner than that retry. Without it an
 * endpoint that fails with many orders queued would have every claim read all their later
 * deliveries, due and held back, again and again; with it each is read once per retry of the
 * one before it. Only moves due times later, so a missed or raced one costs reading, never order.
 */
export function deferBehindRetries(updated: string): string {
  return `UPDATE webhooks.deliveries later SET next_attempt_at = w.until
      FROM (${behind(updated, "u.status = 'pending' AND u.sequence IS NOT NULL AND u.next_attempt_at > now()", "u.next_attempt_at")}) w
     WHERE later.id = w.id`;
}

/**
 * After the deliveries `settledIds` settled, and that was committed: each releases the first
 * unsettled delivery of its line (it left the line as it settled), if that one waits
 * (`dueBehindEarlier`) and was never attempted — due now, but not before its own hold (`holdMs`)
 * has passed since it was stored. Only that one: the others stay out of the claims' way until
 * their own turn comes. A statement of its own, so that it sees a next one committed while they
 * settled (the header: a release is never missed).
 */
export async function releaseNextOf(db: Db, settledIds: readonly number[], holdMs: number): Promise<void> {
  if (settledIds.length === 0) return;
  const line: LineRefs = { entityKey: "u.entity_key", sequence: null, clientId: "s.client_id", url: "s.url" };
  await againAfterDeadlock(() =>
    prepared(
      db.raw(
        `WITH ${deliveriesByIds("u", "id, subscription_id, entity_key, status")}
         UPDATE webhooks.deliveries later
          SET next_attempt_at = greatest(now(), later.created_at + ?::bigint * interval '1 millisecond')
         FROM (SELECT nxt.id
                 FROM u
                 JOIN webhooks.subscriptions s ON s.id = u.subscription_id
                 CROSS JOIN LATERAL (SELECT first.id ${nearestInLine(line, "first", ">")} ORDER BY first.sequence LIMIT 1) nxt
                WHERE u.status <> 'pending' AND u.entity_key IS NOT NULL) w
        WHERE later.id = w.id AND later.claim_token IS NULL AND later.attempt_count = 0 AND later.next_attempt_at > now()`,
        [[...settledIds], holdMs],
      ),
    ),
  );
}

/**
 * After the deliveries `waitingIds` were stored behind an unsettled earlier delivery of their
 * line (`dueBehindEarlier`), and that was committed: each of them that nothing unsettled is
 * before any longer — the earlier one settled while it was stored — is released as
 * `releaseNextOf` would have (the header: a release is never missed).
 */
export async function releaseIfFirstInLine(db: Db, waitingIds: readonly number[], holdMs: number): Promise<void> {
  if (waitingIds.length === 0) return;
  const place: LineRefs = { entityKey: "d.entity_key", sequence: "d.sequence", clientId: "s.client_id", url: "s.url" };
  await againAfterDeadlock(() =>
    prepared(
      db.raw(
        `WITH ${deliveriesByIds("w", "id, sequence")}
         UPDATE webhooks.deliveries d SET next_attempt_at = greatest(now(), d.created_at + ?::bigint * interval '1 millisecond')
         FROM w, webhooks.subscriptions s
        WHERE d.id = w.id AND s.id = d.subscription_id
          -- In its line, and still at the same place should the row have changed meanwhile: said
          -- of w, and of d only with IS NOT DISTINCT FROM, so that nothing said of d matches
          -- deliveries_in_line's predicate (webhooks.deliveries-by-id.ts). No status = 'pending'
          -- either (a settled delivery has no next attempt).
          AND w.sequence IS NOT NULL AND d.sequence IS NOT DISTINCT FROM w.sequence
          AND d.claim_token IS NULL AND d.attempt_count = 0
          AND d.next_attempt_at > greatest(now(), d.created_at + ?::bigint * interval '1 millisecond')
          AND NOT ${earlierUnsettled(place)}`,
        [[...waitingIds], holdMs, holdMs],
      ),
    ),
  );
}

/**
 * The other half of `deferBehindRetries`: the deliveries in `left` (subscription_id, entity_key)
 * are no longer waiting for that retry (redelivered, cancelled), so the later ones of their
 * lines that were deferred to it — never attempted, not claimed — are due now.
 */
function undeferBehind(left: string): string {
  return `UPDATE webhooks.deliveries later SET next_attempt_at = now()
      FROM (${behind(left, "true", "'infinity'")}) w
     WHERE later.id = w.id AND later.attempt_count = 0 AND later.next_attempt_at > now()`;
}

/** A delivery that left its per-entity line (redelivered, cancelled), and which line. */
export interface LeftLine {
  subscription_id: number;
  entity_key: string | null;
}

/** The later deliveries of these lines, deferred to a retry of the ones that left, are due now. */
export async function undeferLines(db: Db, left: LeftLine[]): Promise<void> {
  const lines = left.filter((d) => d.entity_key !== null);
  if (lines.length === 0) return;
  await db.raw(
    `WITH u AS (SELECT *, null::bigint AS sequence, null::timestamptz AS next_attempt_at
                  FROM jsonb_to_recordset(?::jsonb) AS u(subscription_id int, entity_key text))
     ${undeferBehind("u")}`,
    [JSON.stringify(lines)],
  );
}
