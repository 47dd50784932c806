/**
 * GET /api/v1/events (docs/webhooks.md, "The events feed"): the events this client may receive,
 * oldest first, each with the `webhook-id` and body its webhooks carry, paged by `after`.
 */
import { ForbiddenError } from "../../shared/errors";
import { DEFAULT_LIMIT } from "../../shared/http/paging";
import { API_PREFIX } from "../../shared/http/responses";
import type { FeedQuery, FeedRows } from "../../shared/messaging/outbox-feed";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { audienceOf, availableEvents } from "./webhooks.audience";
import { feedActionOf, readFeed } from "./webhooks.feed";
import { decodeFeedCursor, FEED_START } from "./webhooks.feed-cursor";
import { feedParams, type FeedParams } from "./webhooks.params";
import type { WebhooksActions } from "./webhooks.service-context";

export const feedActions: WebhooksActions = {
  feed: {
    visibility: "published",
    scope: "webhooks",
    summary:
      "The events this client may receive (its grants now, as for its subscriptions), oldest first, each with the webhook-id and body its webhooks carry; no gaps: a later page never holds an event that belongs before an earlier one.",
    params: feedParams,
    async handler(ctx: RequestContext<FeedParams>) {
      const clientId = callerOf(ctx).clientId;
      // Asked afresh, like the dispatcher before a send: a grant taken away stops the feed at once.
      const client = (await this.grants.fresh([clientId])).get(clientId);
      const { event, after, limit = DEFAULT_LIMIT } = ctx.params;
      if (event && !(client && availableEvents(client).includes(event)))
        throw new ForbiddenError(
          `This API key may not receive \`${event}\`; GET ${API_PREFIX}/webhooks/available lists the events it may use.`,
          { event },
        );
      return readFeed(this.db, (producer, query) => ctx.call<FeedRows, FeedQuery>(feedActionOf(producer), query), {
        after: after ? decodeFeedCursor(after)! : FEED_START,
        limit,
        event,
        clientId,
        audience: audienceOf(client),
      });
    },
  },
};
