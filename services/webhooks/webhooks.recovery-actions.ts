/**
 * The actions on a subscription's recoveries (docs/webhooks.md, "Recovering after an outage"):
 * ask for one (not of a disabled subscription: webhooks.active-subscription.ts; once per
 * Idempotency-Key: webhooks.idempotency.ts), and follow it. The work itself is the recoverer's
 * (webhooks.recovery.ts).
 */
import { ConflictError, InvalidInputError, NotFoundError } from "../../shared/errors";
import { resourcePath } from "../../shared/http/responses";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { lockActiveSubscription } from "./webhooks.active-subscription";
import { idempotentAction } from "./webhooks.idempotency";
import { recoverParams, recoveryParams, type RecoverParams, type RecoveryParams } from "./webhooks.params";
import { createRecovery, findRecovery, type RecoveryRequest } from "./webhooks.recoveries.repository";
import { sameRecoveryRequest } from "./webhooks.recovery";
import { presentRecovery, type Recovery } from "./webhooks.representation";
import { ownSubscription, type WebhooksActions } from "./webhooks.service-context";

/** A recovery asked again this soon with the same window and flags is answered, not run again. */
export const SAME_RECOVERY_WITHIN_MS = 60_000;

/** `/api/v1/webhooks/{id}/recoveries/{recoveryId}`. */
const recoveryPath = (subscriptionId: number, recoveryId: number) =>
  resourcePath(`webhooks/${subscriptionId}/recoveries`, recoveryId);

export const recoveryActions: WebhooksActions = {
  recover: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Queue again, in the background, every delivery of a time window that did not succeed (or all of them); the same request within 60 s, or while it runs, answers the same recovery. Idempotency-Key replays.",
    params: recoverParams,
    async handler(ctx: RequestContext<RecoverParams>): Promise<Recovery> {
      const asked: RecoveryRequest = {
        since: new Date(ctx.params.since),
        until: ctx.params.until === undefined ? null : new Date(ctx.params.until),
        all: ctx.params.all ?? false,
      };
      if (asked.until && asked.until <= asked.since)
        throw InvalidInputError.field("until", "Must be later than `since`.");
      const clientId = callerOf(ctx).clientId;
      const recovery = await idempotentAction(this.db, ctx, "webhooks.recover", async (trx) => {
        const subscription = await lockActiveSubscription(trx, clientId, ctx.params.id, "exclusive");
        const { row, created } = await createRecovery(trx, subscription.id, asked, SAME_RECOVERY_WITHIN_MS);
        if (!created && !sameRecoveryRequest(row, asked)) {
          throw new ConflictError(
            `Recovery ${row.id} of this subscription, with another window, is not finished: GET ${recoveryPath(subscription.id, row.id)} follows it.`,
            { recoveryId: row.id },
          );
        }
        return {
          status: created ? 202 : 200,
          body: presentRecovery(row),
          location: recoveryPath(subscription.id, row.id),
        };
      });
      if (ctx.meta.$statusCode === 202) this.worker?.recoveryAsked();
      return recovery;
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
