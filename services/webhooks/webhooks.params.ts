/**
 * Validation schemas of the webhooks actions and their static types.
 */
import { EVENTS, type EventName } from "../../shared/outbox";
import { pageParams, type PageQuery } from "../../shared/paging";

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "refused"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const id = { type: "number", integer: true, positive: true, convert: true } as const;

export const availableParams = { $$strict: true } as const;

export const subscribeParams = {
  $$strict: true,
  // A name that is no event at all is a typo (422); a known event the client may not use is 403.
  event: { type: "enum", values: [...EVENTS], messages: { enumValue: "Unknown event: GET /api/v1/webhooks/available lists the events you may subscribe to." } },
  url: { type: "string", trim: true, min: 1, max: 2048 },
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
  status: { type: "enum", values: [...DELIVERY_STATUSES], optional: true, messages: { enumValue: `Must be one of ${DELIVERY_STATUSES.join(", ")}.` } },
  ...pageParams,
} as const;
export interface DeliveriesParams extends PageQuery {
  id: number;
  status?: DeliveryStatus;
}

export const redeliverParams = { $$strict: true, id, deliveryId: id } as const;
export interface RedeliverParams {
  id: number;
  deliveryId: number;
}
