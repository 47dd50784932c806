/**
 * Disabled means refused (docs/webhooks.md, "Endpoint health"): a test, a redelivery or a
 * recovery asked of a disabled subscription would queue deliveries nothing sends, so they are
 * refused with `subscription-disabled` (409) instead, naming `/enable`.
 *
 * The check and the action's writes share one transaction that holds the subscription row: a
 * disabling (which cancels the pending deliveries, webhooks.subscription-health.ts) waits for it,
 * or comes first and is seen. So nothing an action queues is left pending on a disabled
 * subscription, whichever wins.
 */
import type { Knex } from "knex";
import { NotFoundError, SubscriptionDisabledError } from "../../shared/errors";
import { resourcePath } from "../../shared/http/responses";
import type { Db } from "../../shared/database/db";
import type { SubscriptionRow } from "./webhooks.subscriptions.repository";

const S = "webhooks";

/**
 * `share`: actions that may run side by side (a test, a redelivery). `exclusive`: one at a time
 * per subscription (a recovery, which compares itself with the recent ones) — a lock that still
 * lets fan-out insert deliveries (their foreign key takes KEY SHARE).
 */
export type SubscriptionLock = "share" | "exclusive";

/** The caller's subscription, locked for the rest of `trx`; 404 when it has none, 409 when it is disabled. */
export async function lockActiveSubscription(
  trx: Db,
  clientId: number,
  id: number,
  lock: SubscriptionLock,
): Promise<SubscriptionRow> {
  const query = trx.withSchema(S).table("subscriptions").where({ id, client_id: clientId });
  const row = (await (lock === "share" ? query.forShare() : query.forNoKeyUpdate()).first()) as
    SubscriptionRow | undefined;
  if (!row) throw new NotFoundError("webhook subscription", id);
  if (row.status === "disabled") {
    throw new SubscriptionDisabledError(
      `Webhook subscription ${id} is disabled${row.disabled_reason ? ` (${row.disabled_reason})` : ""}: nothing is sent to it. POST ${resourcePath("webhooks", id)}/enable first, then ask again.`,
      { subscriptionId: id, disabledReason: row.disabled_reason },
    );
  }
  return row;
}

/** Runs `work` in a transaction that holds the caller's active subscription (see above). */
export function withActiveSubscription<T>(
  db: Knex,
  clientId: number,
  id: number,
  lock: SubscriptionLock,
  work: (trx: Knex.Transaction, subscription: SubscriptionRow) => Promise<T>,
): Promise<T> {
  return db.transaction(async (trx) => work(trx, await lockActiveSubscription(trx, clientId, id, lock)));
}
