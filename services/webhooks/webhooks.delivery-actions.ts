/**
 * The actions on a client's deliveries (docs/webhooks.md, "Deliveries and redelivery", "Finding
 * a delivery"): send a subscription a test event, search its deliveries or all of the client's
 * with their attempts, send one again. Sending is refused on a disabled subscription
 * (webhooks.active-subscription.ts) and done once per Idempotency-Key (webhooks.idempotency.ts).
 */
import type { Knex } from "knex";
import { InvalidInputError, NotFoundError } from "../../shared/errors";
import { encodeCursor, MAX_PAGE_BYTES, toSizeBoundedPage, type Page } from "../../shared/http/paging";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import type { Db } from "../../shared/database/db";
import { lockActiveSubscription } from "./webhooks.active-subscription";
import { attemptsOf } from "./webhooks.attempts.repository";
import { findDelivery, scheduleAgain } from "./webhooks.deliveries.repository";
import { clientSubscriptions, searchDeliveries, type SearchedSubscription } from "./webhooks.delivery-search";
import { idempotentAction } from "./webhooks.idempotency";
import {
  allDeliveriesParams,
  deliveriesParams,
  idParams,
  redeliverParams,
  type AllDeliveriesParams,
  type DeliveriesParams,
  type IdParams,
  type RedeliverParams,
} from "./webhooks.params";
import { presentDelivery, type Delivery } from "./webhooks.representation";
import { ownSubscription, type WebhooksActions } from "./webhooks.service-context";
import { queueTestEvent } from "./webhooks.test-event";

/** One delivery of this subscription with its attempts. */
async function presentDeliveryOf(db: Db, subscriptionId: number, deliveryId: number): Promise<Delivery> {
  // Gone meanwhile: the subscription was deleted with its deliveries.
  const row = await findDelivery(db, subscriptionId, deliveryId);
  if (!row) throw new NotFoundError("delivery", deliveryId);
  return presentDelivery(row, (await attemptsOf(db, [row.id])).get(row.id) ?? []);
}

/** A page of the search over these subscriptions, each delivery with its attempts. */
async function searchPage(
  db: Knex,
  subscriptions: readonly SearchedSubscription[],
  params: AllDeliveriesParams,
  cursorScope?: readonly number[],
): Promise<Page<Delivery>> {
  const { order = "asc", since, until, ...rest } = params;
  if (since && until && new Date(until) <= new Date(since))
    throw InvalidInputError.field("until", "Must be later than `since`.");
  const { rows, hasMore } = await searchDeliveries(
    db,
    subscriptions,
    { ...rest, order, since: since ? new Date(since) : undefined, until: until ? new Date(until) : undefined },
    cursorScope,
  );
  const attempts = await attemptsOf(
    db,
    rows.map((r) => r.id),
  );
  // Each delivery carries its body: a page also stops at MAX_PAGE_BYTES (docs/webhooks.md).
  const deliveries = rows.map((r) => presentDelivery(r, attempts.get(r.id) ?? []));
  const last = rows.at(-1);
  return toSizeBoundedPage(deliveries, hasMore && last ? encodeCursor(last.id) : null, (d) => d.id, MAX_PAGE_BYTES);
}

export const deliveryActions: WebhooksActions = {
  sendTest: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Send a `webhook_test` event to this subscription, the way every event goes: signed, logged, retried, listed in its deliveries. Idempotency-Key replays.",
    params: idParams,
    async handler(ctx: RequestContext<IdParams>): Promise<Delivery> {
      const clientId = callerOf(ctx).clientId;
      const delivery = await idempotentAction(this.db, ctx, "webhooks.sendTest", async (trx) => {
        const subscription = await lockActiveSubscription(trx, clientId, ctx.params.id, "share");
        const deliveryId = await queueTestEvent(trx, subscription);
        return { status: 202, body: await presentDeliveryOf(trx, subscription.id, deliveryId) };
      });
      this.worker?.deliveriesQueued();
      return delivery;
    },
  },

  deliveries: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "A subscription's deliveries, each with its attempts: oldest first or newest first (?order=), filtered by ?since=, ?until=, ?event=, ?status=, ?webhookId=.",
    params: deliveriesParams,
    async handler(ctx: RequestContext<DeliveriesParams>) {
      const { id, ...search } = ctx.params;
      const subscription = await ownSubscription(this.db, ctx, id);
      return searchPage(this.db, [subscription], search);
    },
  },

  searchDeliveries: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "The deliveries of all this client's subscriptions, with the same filters and order as a subscription's: where did `msg_…` go?",
    params: allDeliveriesParams,
    async handler(ctx: RequestContext<AllDeliveriesParams>) {
      const subscriptions = await clientSubscriptions(this.db, callerOf(ctx).clientId);
      return searchPage(this.db, subscriptions, ctx.params);
    },
  },

  redeliver: {
    visibility: "published",
    scope: "webhooks",
    summary: "Send a delivery again, whatever its status, with a fresh retry schedule. Idempotency-Key replays.",
    params: redeliverParams,
    async handler(ctx: RequestContext<RedeliverParams>): Promise<Delivery> {
      const clientId = callerOf(ctx).clientId;
      const delivery = await idempotentAction(this.db, ctx, "webhooks.redeliver", async (trx) => {
        const subscription = await lockActiveSubscription(trx, clientId, ctx.params.id, "share");
        if (!(await scheduleAgain(trx, subscription.id, ctx.params.deliveryId))) {
          throw new NotFoundError("delivery", ctx.params.deliveryId);
        }
        return { status: 202, body: await presentDeliveryOf(trx, subscription.id, ctx.params.deliveryId) };
      });
      this.worker?.deliveriesQueued();
      return delivery;
    },
  },
};
