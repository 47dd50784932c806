/**
 * The actions on a subscription's recoveries (docs/webhooks.md, "Recovering after an outage"):
 * ask for one, and follow it. The work itself is the recoverer's (webhooks.recovery.ts).
 */
import { ConflictError, InvalidInputError, NotFoundError } from "../../shared/errors";
import { resourcePath } from "../../shared/http/responses";
import type { RequestContext } from "../../shared/security/auth";
import { recoverParams, recoveryParams, type RecoverParams, type RecoveryParams } from "./webhooks.params";
import { createRecovery, findRecovery, type RecoveryRequest } from "./webhooks.recoveries.repository";
import { sameRecoveryRequest } from "./webhooks.recovery";
import { presentRecovery, type Recovery } from "./webhooks.representation";
import { ownSubscription, type WebhooksActions } from "./webhooks.service-context";

/** `/api/v1/webhooks/{id}/recoveries/{recoveryId}`. */
const recoveryPath = (subscriptionId: number, recoveryId: number) =>
  resourcePath(`webhooks/${subscriptionId}/recoveries`, recoveryId);

export const recoveryActions: WebhooksActions = {
  recover: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Queue again, in the background, every delivery of a time window that did not succeed (or all of them); the same request while it runs answers the same recovery.",
    params: recoverParams,
    async handler(ctx: RequestContext<RecoverParams>): Promise<Recovery> {
      const subscription = await ownSubscription(this.db, ctx, ctx.params.id);
      const asked: RecoveryRequest = {
        since: new Date(ctx.params.since),
        until: ctx.params.until === undefined ? null : new Date(ctx.params.until),
        all: ctx.params.all ?? false,
      };
      if (asked.until && asked.until <= asked.since)
        throw InvalidInputError.field("until", "Must be later than `since`.");
      const { row, created } = await createRecovery(this.db, subscription.id, asked);
      if (!created && !sameRecoveryRequest(row, asked)) {
        throw new ConflictError(
          `Recovery ${row.id} of this subscription, with another window, is not finished: GET ${recoveryPath(subscription.id, row.id)} follows it.`,
          { recoveryId: row.id },
        );
      }
      if (created) this.worker?.recoveryAsked();
      ctx.meta.$statusCode = created ? 202 : 200;
      ctx.meta.$location = recoveryPath(subscription.id, row.id);
      return presentRecovery(row);
    },
  },

  recovery: {
    visibility: "published",
    scope: "webhooks",
    summary: "A recovery of this subscription and how far it got.",
    params: recoveryParams,
    async handler(ctx: RequestContext<RecoveryParams>): Promise<Recovery> {
      const subscription = await ownSubscription(this.db, ctx, ctx.params.id);
      const row = await findRecovery(this.db, subscription.id, ctx.params.recoveryId);
      if (!row) throw new NotFoundError("recovery", ctx.params.recoveryId);
      return presentRecovery(row);
    },
  },
};
