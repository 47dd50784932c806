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
}

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

  /** Of these claimed deliveries, those the limits allow now; the others are put back (one statement each way). */
  async admit(claimed: ClaimedDelivery[]): Promise<Admission> {
    await this.refresh();
    const bySubscription = new Map<number, ClaimedDelivery[]>();
    const admitted: ClaimedDelivery[] = [];
    for (const delivery of claimed) {
      const id = Number(delivery.subscription_id);
      if (!this.rates.has(id)) admitted.push(delivery);
      else bySubscription.set(id, [...(bySubscription.get(id) ?? []), delivery]);
    }
    if (bySubscription.size === 0) return { admitted, nextDueInMs: null };

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
    await putBackClaims(this.db, putBack);
    return {
      admitted,
      nextDueInMs: putBack.length === 0 ? null : Math.min(...putBack.map((p) => p.delay_ms)),
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
  const rows = (await db
    .withSchema(S)
    .table("subscriptions")
    .whereNotNull("rate_limit")
    .select("id", "rate_limit")) as { id: number; rate_limit: number }[];
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

/**
 * Takes up to `wanted` sends for each subscription, in one statement. Each row is updated under
 * its lock, from its latest version (a concurrent admission by another replica waits, then
 * sees what this one took); the count granted is computed in the same SET, from the row before
 * it (UPDATE … RETURNING sees only the new row), so `next_send_at` holds the grant's arithmetic.
 * `clock_timestamp()`, not `now()`: a statement that waited for a lock grants from the time it
 * got it. A subscription without a row gets one, used from its next admission.
 */
async function takeSends(db: Db, asked: { id: number; wanted: number; rate: number }[]): Promise<Grant[]> {
  const input = asked.map((a) => ({ ...a, burst: burstOf(a.rate) }));
  const { rows } = await db.raw<{ rows: { id: number; granted: number; next_send_in_ms: number }[] }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS i(id int, wanted int, rate int, burst int)
     ), missing AS (
       INSERT INTO ??.throttles (subscription_id, next_send_at) SELECT id, now() FROM input
       ON CONFLICT (subscription_id) DO NOTHING
     ), taken AS (
       SELECT t.subscription_id AS id, i.rate, base.at AS base,
              least(i.wanted, greatest(0, floor(extract(epoch FROM clock_timestamp() - base.at) * i.rate + 1e-9)::int + i.burst)) AS granted
         FROM ??.throttles t
         JOIN input i ON i.id = t.subscription_id
         CROSS JOIN LATERAL (SELECT greatest(t.next_send_at, clock_timestamp()) AS at) base
        ORDER BY t.subscription_id
          FOR NO KEY UPDATE OF t
     )
     UPDATE ??.throttles t
        SET next_send_at = taken.base + taken.granted * (interval '1 second' / taken.rate)
       FROM taken
      WHERE t.subscription_id = taken.id
     RETURNING t.subscription_id AS id, taken.granted,
               extract(epoch FROM t.next_send_at - clock_timestamp()) * 1000 AS next_send_in_ms`,
    [JSON.stringify(input), S, S, S],
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
