/**
 * Validation schemas of the webhooks actions and their static types.
 */
import { EVENTS, type EventName } from "../../shared/events";
import { pageParams, type PageQuery } from "../../shared/paging";
import { BIGINT_ID_MAX, optional, pathId } from "../../shared/params";

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "refused", "cancelled"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const id = pathId("webhook");

export const availableParams = { $$strict: true } as const;

export const subscribeParams = {
  $$strict: true,
  // A name that is no event at all is a typo (422); a known event the client may not use is 403.
  event: { type: "enum", values: [...EVENTS], messages: { enumValue: "Unknown event: GET /api/v1/webhooks/available lists the events you may subscribe to." } },
  url: {
    type: "string", trim: true, min: 1, max: 2048,
    // Checked with the address it resolves to (webhooks.url-policy.ts); written here so that the document says it.
    jsonSchemaAlso: {
      format: "uri",
      pattern: "^https://",
      description: "An `https://` URL whose host resolves to a public address (an operator may allow `http://` and private addresses for development).",
    },
  },
} as const;
export interface SubscribeParams {
  event: EventName;
  url: string;
}

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = PageQuery;

export const idParams = { $$strict: true, id } as const;
export interface IdParams {
  id: number;
}

export const deliveriesParams = {
  $$strict: true,
  id,
  status: optional({ type: "enum", values: [...DELIVERY_STATUSES], messages: { enumValue: `Must be one of ${DELIVERY_STATUSES.join(", ")}.` } }),
  ...pageParams,
} as const;
export interface DeliveriesParams extends PageQuery {
  id: number;
  status?: DeliveryStatus;
}

/** Delivery ids are `bigint`: up to 2^53−1 (shared/params.ts). */
export const redeliverParams = { $$strict: true, id, deliveryId: pathId("delivery", BIGINT_ID_MAX) } as const;
export interface RedeliverParams {
  id: number;
  deliveryId: number;
}
