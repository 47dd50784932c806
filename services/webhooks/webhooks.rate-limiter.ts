/**
 * A subscription's rate limit (`rateLimit`, deliveries per second its endpoint accepts; docs/webhooks.md,
 * "Changing a subscription"), held across every webhooks replica: each send of a limited
 * subscription is admitted by one row of `webhooks.throttles`, updated atomically in PostgreSQL,
 * so N replicas together send no faster than one would.
 *
 * The row holds GCRA's theoretical arrival time (`next_send_at`): with I = 1/rate seconds and a
 * burst of B sends (`burstOf`), a send is allowed at t when t ≥ next_send_at − (B − 1)·I, and
 * moves it to max(next_send_at, t) + I. Any window of one second so holds at most rate + B − 1
 * sends: within 10 % of the limit. The burst keeps the rate reachable with rounds of claims, not
 * one round per send.
 *
 * The dispatcher claims due deliveries as usual, then asks `admit`: what the limit allows now is
 * sent, the rest is put back, due when the limit will allow it, with no attempt spent and nothing
 * recorded (it was never sent). Which subscriptions are limited is read at most once per
 * REFRESH_MS (and at once after this process changed one): another replica applies a changed
 * limit within that time.
 */
import type { Knex } from "knex";
import type { Db } from "../../shared/database/db";
import type { ClaimedDelivery } from "./webhooks.deliveries.repository";

const S = "webhooks";

/** How old this process's list of limited subscriptions may be. */
export const REFRESH_MS = 1_000;

/**
 * The sends allowed at once after a pause: one, and one more per twenty of the rate. A
 * dispatcher that comes back a little late catches up within the second, and no second holds
 * more than rate + ⌊rate / 20⌋ sends as they are admitted (5 %): the other half of the 10 % is
 * for the jitter between an admission and its request reaching the receiver.
 */
export function burstOf(rate: number): number {
  return Math.floor(rate / 20) + 1;
}

/**
 * When each put-back delivery may go, in ms from now: the k-th (from 0) after a grant left the
 * next send at `nextSendInMs` from now.
 */
export function releaseDelaysMs(nextSendInMs: number, rate: number, count: number): number[] {
  const interval = 1000 / rate;
  const tolerance = (burstOf(rate) - 1) * interval;
  return Array.from({ length: count }, (_, k) => Math.max(1, Math.ceil(nextSendInMs - tolerance + k * interval)));
}

export interface Admission {
  /** Send these now. */
  admitted: ClaimedDelivery[];
  /** When the first delivery put back is due, in ms from now; null when none was. */
  nextDueInMs: number | null;
  /**
   * Puts back the claimed deliveries the limit does not allow yet. Called once the admitted ones
   * are on their way: they leave as soon as they were allowed, not a statement later. Until
   * then the others stay claimed, so nobody sends them meanwhile.
   */
  putBack(): Promise<void>;
}

/** An admission with nothing left over. */
export const NOTHING_TO_PUT_BACK = (): Promise<void> => Promise.resolve();

export class RateLimiter {
  private rates = new Map<number, number>();
  private readAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Knex,
    private readonly now: () => number = Date.now,
  ) {}

  /** A limit was changed in this process: read them again before the next admission. */
  changed(): void {
    this.readAt = Number.NEGATIVE_INFINITY;
  }

  /** Whether this subscription has a rate limit, as last read (the fan-out sends none of its deliveries directly). */
  isLimited(subscriptionId: number): boolean {
    return this.rates.has(subscriptionId);
  }

  /** Of these claimed deliveries, those the limits allow now (one statement), and how to put the others back (one more). */
  async admit(claimed: ClaimedDelivery[]): Promise<Admission> {
    await this.refresh();
    const bySubscription = new Map<number, ClaimedDelivery[]>();
    const admitted: ClaimedDelivery[] = [];
    for (const delivery of claimed) {
      const id = Number(delivery.subscription_id);
      if (!this.rates.has(id)) admitted.push(delivery);
      else bySubscription.set(id, [...(bySubscription.get(id) ?? []), delivery]);
    }
    if (bySubscription.size === 0) return { admitted, nextDueInMs: null, putBack: NOTHING_TO_PUT_BACK };

    const asked = [...bySubscription].map(([id, deliveries]) => ({
      id,
      wanted: deliveries.length,
      rate: this.rates.get(id)!,
    }));
    const grants = new Map((await takeSends(this.db, asked)).map((g) => [g.id, g]));
    const putBack: { id: number; claim_token: string; delay_ms: number }[] = [];
    for (const { id, rate } of asked) {
      const deliveries = bySubscription.get(id)!;
      // No row yet (limited by another replica a moment ago): it is made now, the next round sends.
      const grant = grants.get(id) ?? { granted: 0, next_send_in_ms: 1000 / rate };
      admitted.push(...deliveries.slice(0, grant.granted));
      const rest = deliveries.slice(grant.granted);
      const delays = releaseDelaysMs(grant.next_send_in_ms, rate, rest.length);
      rest.forEach((d, k) => putBack.push({ id: d.id, claim_token: d.claim_token, delay_ms: delays[k] }));
    }
    return {
      admitted,
      nextDueInMs: putBack.length === 0 ? null : Math.min(...putBack.map((p) => p.delay_ms)),
      putBack: () => putBackClaims(this.db, putBack),
    };
  }

  private async refresh(): Promise<void> {
    if (this.now() - this.readAt < REFRESH_MS) return;
    this.rates = await limitedSubscriptions(this.db);
    this.readAt = this.now();
  }
}

// ---- its SQL -------------------------------------------------------------------------------

/** Every subscription with a rate limit, and its limit. */
async function limitedSubscriptions(db: Db): Promise<Map<number, number>> {
  const rows = await db
    .withSchema(S)
    .table("subscriptions")
    .whereNotNull("rate_limit")
    .select<{ id: number; rate_limit: number }[]>("id", "rate_limit");
  return new Map(rows.map((r) => [r.id, r.rate_limit]));
}

/** Gives a limited subscription its throttle row (in the transaction that sets the limit). */
export async function ensureThrottle(db: Db, subscriptionId: number): Promise<void> {
  await db.raw(
    `INSERT INTO ??.throttles (subscription_id, next_send_at) VALUES (?, now()) ON CONFLICT (subscription_id) DO NOTHING`,
    [S, subscriptionId],
  );
}

interface Grant {
  id: number;
  granted: number;
  /** When the next send is allowed without the burst's tolerance, in ms from now. */
  next_send_in_ms: number;
}

/** When the next send of throttle row `t` may go at the earliest: not before now. */
const BASE = `greatest(t.next_send_at, clock_timestamp())`;
/** How many of `i.wanted` sends row `t` allows now (GCRA with a burst of `i.burst`). */
const GRANTED = `least(i.wanted, greatest(0, floor(extract(epoch FROM clock_timestamp() - ${BASE}) * i.rate + 1e-9)::int + i.burst))`;

/**
 * Takes up to `wanted` sends for each subscription, in one UPDATE. Its SET expressions read the
 * row they update, so a concurrent admission by another replica (which holds the row until it
 * commits) is seen: PostgreSQL evaluates them again on the row's latest version. They must stay
 * in the SET: a locking read in a CTE hands on what it computed before the wait, and two
 * replicas would both grant from the same state (the CTE here only takes the locks, in id order,
 * so that two admissions never wait on each other in a circle). `clock_timestamp()`, not
 * `now()`, for the same reason. A subscription without a row gets one, used from its next admission.
 */
async function takeSends(db: Db, asked: { id: number; wanted: number; rate: number }[]): Promise<Grant[]> {
  const input = JSON.stringify(asked.map((a) => ({ ...a, burst: burstOf(a.rate) })));
  const { rows } = await db.raw<{ rows: { id: number; granted: number; next_send_in_ms: number }[] }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS i(id int, wanted int, rate int, burst int)
     ), missing AS (
       INSERT INTO ??.throttles (subscription_id, next_send_at) SELECT id, now() FROM input
       ON CONFLICT (subscription_id) DO NOTHING
     ), locked AS (
       SELECT subscription_id FROM ??.throttles WHERE subscription_id IN (SELECT id FROM input)
        ORDER BY subscription_id FOR NO KEY UPDATE
     )
     UPDATE ??.throttles t
        SET granted = ${GRANTED},
            next_send_at = ${BASE} + ${GRANTED} * (interval '1 second' / i.rate)
       FROM input i
      WHERE t.subscription_id = i.id AND t.subscription_id IN (SELECT subscription_id FROM locked)
     RETURNING t.subscription_id AS id, t.granted, extract(epoch FROM t.next_send_at - clock_timestamp()) * 1000 AS next_send_in_ms`,
    [input, S, S, S],
  );
  return rows.map((r) => ({ id: r.id, granted: Number(r.granted), next_send_in_ms: Number(r.next_send_in_ms) }));
}

/** Puts claimed deliveries back, each due after its delay, as they were before the claim (no attempt spent). */
async function putBackClaims(db: Db, putBack: { id: number; claim_token: string; delay_ms: number }[]): Promise<void> {
  if (putBack.length === 0) return;
  await db.raw(
    `UPDATE ??.deliveries d
        SET next_attempt_at = now() + i.delay_ms * interval '1 millisecond', claim_token = NULL, updated_at = now()
       FROM jsonb_to_recordset(?::jsonb) AS i(id bigint, claim_token uuid, delay_ms int)
      WHERE d.id = i.id AND d.claim_token = i.claim_token`,
    [S, JSON.stringify(putBack)],
  );
}
