/**
 * The grants asked again where a stale answer would leak (docs/webhooks.md, "When a client's
 * access changes"): just before a claimed delivery is sent, and when a client changes. What its
 * client may no longer receive is cancelled (kept in the log with `cancelled` status); who hears
 * which event is webhooks.audience.ts's rule, the same one fan-out applies.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { audienceOf, hears } from "./webhooks.audience";
import { cancelClaims, cancelQueuedDeliveries, type ClaimedDelivery } from "./webhooks.deliveries.repository";
import type { ClientGrants } from "./webhooks.grants";

/**
 * The claimed deliveries whose client is entitled to them right now, by grants asked afresh (so
 * nothing depends on a broadcast arriving); the others are cancelled. Throwing sends nothing: the
 * claims wait for their lease to end.
 */
export async function entitledOnly(
  db: Knex,
  grants: ClientGrants,
  logger: Service["logger"],
  claimed: ClaimedDelivery[],
): Promise<ClaimedDelivery[]> {
  const principals = await grants.fresh(claimed.map((d) => d.client_id));
  const allowed = (d: ClaimedDelivery) =>
    hears(principals.get(d.client_id), d.client_id, { event: d.event, ownerClientId: d.owner_client_id });
  const refused = claimed.filter((d) => !allowed(d));
  if (refused.length > 0) {
    await cancelClaims(db, refused);
    logger.info(`Webhooks: cancelled ${refused.length} deliveries whose client is no longer entitled to them.`);
  }
  return claimed.filter(allowed);
}

/** A client changed: its queued deliveries it may no longer receive are cancelled. */
export async function recheckClient(
  db: Knex,
  grants: ClientGrants,
  logger: Service["logger"],
  clientId: number,
): Promise<void> {
  grants.forget(clientId);
  await cancelUnheard(db, grants, logger, clientId);
}

/**
 * Cancels this client's queued deliveries that its grants, asked afresh, no longer let it hear.
 * When that cannot be done now, nothing leaks: the dispatcher checks each delivery before sending.
 */
export async function cancelUnheard(
  db: Knex,
  grants: ClientGrants,
  logger: Service["logger"],
  clientId: number,
): Promise<void> {
  try {
    const client = (await grants.fresh([clientId])).get(clientId);
    const cancelled = await cancelQueuedDeliveries(db, clientId, audienceOf(client));
    if (cancelled > 0)
      logger.info(`Webhooks: cancelled ${cancelled} queued deliveries client ${clientId} may no longer receive.`);
  } catch (err) {
    logger.warn(
      `Webhooks: could not re-check client ${clientId}'s queued deliveries now; the dispatcher checks each before sending: ${(err as Error).message}`,
    );
  }
}
