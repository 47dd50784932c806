/**
 * The actions that change a subscription in place (docs/webhooks.md, "Changing a subscription"):
 * PATCH its URL, description, custom headers, rate limit or ordering — it keeps its id, key, secret and
 * whole delivery log — and disable it (the mirror of /enable, in webhooks.subscription-actions.ts).
 */
import { conflictOnUnique } from "../../shared/database/database-errors";
import { ConflictError, InvalidInputError, NotFoundError } from "../../shared/errors";
import { resourcePath } from "../../shared/http/responses";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { applyHeaderChanges, openHeaders, sealHeaders } from "./webhooks.custom-headers";
import { idParams, updateParams, type IdParams, type UpdateParams } from "./webhooks.params";
import { ensureThrottle } from "./webhooks.rate-limiter";
import { presentSubscription, type Subscription } from "./webhooks.representation";
import { ownSubscription, type WebhooksActions, type WebhooksSettings } from "./webhooks.service-context";
import { subscriptionsChanged } from "./webhooks.listeners";
import { disableSubscription } from "./webhooks.subscription-health";
import {
  findSubscriptionByTarget,
  lockSubscription,
  updateSubscription,
  type SubscriptionChanges,
} from "./webhooks.subscriptions.repository";
import { checkTarget } from "./webhooks.url-policy";

const CHANGEABLE = ["url", "description", "headers", "rateLimit", "ordering"] as const;

export const subscriptionEditActions: WebhooksActions = {
  update: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Change a subscription's URL, description, custom headers, rate limit or ordering; it keeps its id, key, secret and deliveries, and its pending deliveries go to the new URL from their next attempt.",
    params: updateParams,
    async handler(ctx: RequestContext<UpdateParams>): Promise<Subscription> {
      const { id, url, description, headers, rateLimit, ordering } = ctx.params;
      if (CHANGEABLE.every((field) => ctx.params[field] === undefined))
        throw InvalidInputError.field("", `Give at least one of ${CHANGEABLE.map((f) => `\`${f}\``).join(", ")}.`);
      const clientId = callerOf(ctx).clientId;
      // The URL rules and the address check again, as when subscribing (before anything is written).
      let newUrl: string | undefined;
      if (url !== undefined) {
        const target = await checkTarget(url, {
          allowInsecure: (this.settings as WebhooksSettings).webhooks.allowInsecureTargets,
        });
        if (!target.ok) throw InvalidInputError.field("url", target.reason);
        newUrl = target.url.href;
      }
      const changed = this.db.transaction(async (trx) => {
        const current = await lockSubscription(trx, clientId, id);
        if (!current) throw new NotFoundError("webhook subscription", id);
        const changes: SubscriptionChanges = {
          url: newUrl,
          description: description === undefined ? undefined : description || null,
          headers:
            headers === undefined
              ? undefined
              : sealHeaders(applyHeaderChanges(openHeaders(current.headers, this.secrets), headers), this.secrets),
          rateLimit,
          ordering,
        };
        if (typeof rateLimit === "number") await ensureThrottle(trx, id);
        return updateSubscription(trx, clientId, id, changes);
      });
      // Only the URL is unique (per client and event): another subscription has it already.
      const row = await conflictOnUnique(changed, async () => {
        const { event } = await ownSubscription(this.db, ctx, id);
        const existing = newUrl ? await findSubscriptionByTarget(this.db, clientId, event, newUrl) : undefined;
        return new ConflictError(
          `This client already sends \`${event}\` to this URL: ${existing ? resourcePath("webhooks", existing.id) : "another subscription"}.`,
          { path: "url", ...(existing ? { id: existing.id } : {}) },
        );
      });
      if (!row) throw new NotFoundError("webhook subscription", id);
      // Fan-out hands deliveries over by endpoint (the URL's origin): it reads the new one.
      if (newUrl !== undefined) await subscriptionsChanged(this);
      // This process's dispatcher applies a new rate limit at once; the others within a second.
      if (rateLimit !== undefined) this.worker?.rateLimitsChanged();
      return presentSubscription(row);
    },
  },

  disable: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "Disable a subscription (the mirror of /enable): nothing is sent to it until it is enabled again; a disabled one stays as it is.",
    params: idParams,
    async handler(ctx: RequestContext<IdParams>): Promise<Subscription> {
      const subscription = await ownSubscription(this.db, ctx, ctx.params.id);
      const disabled = await disableSubscription(this.db, subscription.id, "owner");
      if (disabled) await subscriptionsChanged(this);
      // Not active any more (disabled already, maybe just now by its health): as it is now.
      return presentSubscription(disabled ?? (await ownSubscription(this.db, ctx, ctx.params.id)));
    },
  },
};
