/**
 * Changes that cancel queued deliveries, applied to the outcomes written after them.
 *
 * When a client loses an event (webhooks.entitlement.ts `recheckClient`, on its `clients.changed`
 * broadcast) or a subscription is disabled (webhooks.subscription-health.ts
 * `disableSubscription`), the deliveries queued at that moment are cancelled. A delivery whose
 * attempt was in flight then was not among them: sent before its row existed
 * (webhooks.send-first.ts), or stored claimed after the disabling. If that attempt fails, its
 * outcome writes it queued for a retry that nothing would cancel: the dispatcher would cancel it
 * only when the retry comes due (grants), or never send it (a disabled subscription), and the
 * log would say `pending` meanwhile. So once such outcomes are written, the changes they missed
 * are applied to them:
 *
 * - grants: each delivery the fan-out handed over carries the version of the grants it decided
 *   on (webhooks.grants.ts). The outcome is written first, then the version is compared: a
 *   change heard before the comparison is re-checked here; one heard after it finds the row.
 * - disabling: the subscriptions are read FOR SHARE (webhooks.deliveries.repository.ts
 *   `cancelPendingOfDisabled`), which waits for a disabling under way.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { cancelPendingOfDisabled, type ClaimedDelivery } from "./webhooks.deliveries.repository";
import { cancelUnheard } from "./webhooks.entitlement";
import type { ClientGrants } from "./webhooks.grants";

/** What of a delivery whose outcome left it queued this reads. */
export type QueuedOutcome = Pick<ClaimedDelivery, "id" | "subscription_id" | "client_id" | "grants_version">;

/**
 * Applies to these deliveries, just written queued, the changes made while their attempts were
 * in flight. A failure is logged: the dispatcher still checks the grants before each retry.
 */
export async function applyChangesMissed(
  db: Knex,
  grants: ClientGrants,
  logger: Service["logger"],
  queued: readonly QueuedOutcome[],
): Promise<void> {
  if (queued.length === 0) return;
  const changedClients = new Set(
    queued
      .filter((d) => d.grants_version !== undefined && grants.changedSince(d.client_id, d.grants_version))
      .map((d) => d.client_id),
  );
  for (const clientId of changedClients) await cancelUnheard(db, grants, logger, clientId);
  try {
    const cancelled = await cancelPendingOfDisabled(
      db,
      queued.map((d) => ({ id: Number(d.id), subscription_id: d.subscription_id })),
    );
    if (cancelled > 0)
      logger.info(`Webhooks: cancelled ${cancelled} deliveries queued after their subscription was disabled.`);
  } catch (err) {
    logger.warn(
      `Webhooks: could not check whether ${queued.length} deliveries queued just now belong to a disabled subscription: ${(err as Error).message}`,
    );
  }
}
