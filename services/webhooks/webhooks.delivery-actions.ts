/**
 * The actions on a subscription's deliveries (docs/webhooks.md, "Deliveries and redelivery"):
 * send it a test event, list its deliveries with their attempts, send one again.
 */
import { NotFoundError } from "../../shared/errors";
import { MAX_PAGE_BYTES, toSizeBoundedPage } from "../../shared/http/paging";
import type { RequestContext } from "../../shared/security/auth";
import type { Knex } from "knex";
import { attemptsOf } from "./webhooks.attempts.repository";
import { findDelivery, listDeliveries, scheduleAgain } from "./webhooks.deliveries.repository";
import {
  deliveriesParams,
  idParams,
  redeliverParams,
  type DeliveriesParams,
  type IdParams,
  type RedeliverParams,
} from "./webhooks.params";
import { presentDelivery, type Delivery } from "./webhooks.representation";
import { ownSubscription, type WebhooksActions } from "./webhooks.service-context";
import { queueTestEvent } from "./webhooks.test-event";

/** One delivery of this subscription with its attempts. */
async function presentDeliveryOf(db: Knex, subscriptionId: number, deliveryId: number): Promise<Delivery> {
  // Gone meanwhile: the subscription was deleted with its deliveries.
  const row = await findDelivery(db, subscriptionId, deliveryId);
  if (!row) throw new NotFoundError("delivery", deliveryId);
  return presentDelivery(row, (await attemptsOf(db, [row.id])).get(row.id) ?? []);
}

export const deliveryActions: WebhooksActions = {
  sendTest: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Send a `webhook_test` event to this subscription, the way every event goes: signed, logged, retried, listed in its deliveries.",
    params: idParams,
    async handler(ctx: RequestContext<IdParams>): Promise<Delivery> {
      const subscription = await ownSubscription(this.db, ctx, ctx.params.id);
      const deliveryId = await queueTestEvent(this.db, subscription);
      this.worker?.deliveriesQueued();
      ctx.meta.$statusCode = 202;
      return presentDeliveryOf(this.db, subscription.id, deliveryId);
    },
  },

  deliveries: {
    visibility: "published",
    scope: "webhooks",
    summary: "A subscription's deliveries, oldest first, each with its attempts; filter with ?status=.",
    params: deliveriesParams,
    async handler(ctx: RequestContext<DeliveriesParams>) {
      const { id, status, ...page } = ctx.params;
      const subscription = await ownSubscription(this.db, ctx, id);
      const { rows, nextCursor } = await listDeliveries(this.db, subscription.id, page, status);
      const attempts = await attemptsOf(
        this.db,
        rows.map((r) => r.id),
      );
      // Each delivery carries its body: a page also stops at MAX_PAGE_BYTES (docs/webhooks.md).
      const deliveries = rows.map((r) => presentDelivery(r, attempts.get(r.id) ?? []));
      return toSizeBoundedPage(deliveries, nextCursor, (d) => d.id, MAX_PAGE_BYTES);
    },
  },

  redeliver: {
    visibility: "published",
    scope: "webhooks",
    summary: "Send a delivery again, whatever its status, with a fresh retry schedule.",
    params: redeliverParams,
    async handler(ctx: RequestContext<RedeliverParams>): Promise<Delivery> {
      const subscription = await ownSubscription(this.db, ctx, ctx.params.id);
      if (!(await scheduleAgain(this.db, subscription.id, ctx.params.deliveryId))) {
        throw new NotFoundError("delivery", ctx.params.deliveryId);
      }
      this.worker?.deliveriesQueued();
      ctx.meta.$statusCode = 202;
      return presentDeliveryOf(this.db, subscription.id, ctx.params.deliveryId);
    },
  },
};
