/**
 * Validation schemas of the webhooks actions and their static types.
 */
import {
  EVENTS,
  SUBSCRIPTION_EVENT_NAMES,
  type DeliveredEventName,
  type EventName,
} from "../../shared/messaging/events";
import { pageParams, type PageQuery } from "../../shared/http/paging";
import { BIGINT_ID_MAX, identifier, optional, pathId } from "../../shared/http/params";
import { API_PREFIX } from "../../shared/http/responses";
import { decodeFeedCursor } from "./webhooks.feed-cursor";
import { HEADER_NAME, HEADER_VALUE, MAX_CUSTOM_HEADERS, type HeaderChanges } from "./webhooks.custom-headers";
import { SIGNATURE_SCHEMES, type SignatureScheme } from "./webhooks.signing";

/** A subscription's `ordering` (webhooks.ordering.ts: what `per_entity` holds in line). */
export const ORDERINGS = ["none", "per_entity"] as const;
export type Ordering = (typeof ORDERINGS)[number];

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "refused", "cancelled"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const id = pathId("webhook");

function signatureRule(description: string) {
  return optional({
    type: "enum",
    values: [...SIGNATURE_SCHEMES],
    messages: { enumValue: `Must be one of ${SIGNATURE_SCHEMES.join(", ")}.` },
    jsonSchemaAlso: { description },
  });
}

const orderingRule = optional({
  type: "enum",
  values: [...ORDERINGS],
  messages: { enumValue: `Must be one of ${ORDERINGS.join(", ")}.` },
  jsonSchemaAlso: {
    description:
      "`per_entity`: the deliveries about one entity (an order) to this client's `per_entity` subscriptions on this URL are sent one at a time, in the order the changes were made; `none` (the default): no order.",
  },
});

export const availableParams = { $$strict: true } as const;

export const subscribeParams = {
  $$strict: true,
  // A name that is no event at all is a typo (422); a known event the client may not use is 403.
  event: {
    type: "enum",
    values: [...EVENTS],
    messages: {
      enumValue: `Unknown event: GET ${API_PREFIX}/webhooks/available lists the events you may subscribe to.`,
    },
  },
  url: {
    type: "string",
    trim: true,
    min: 1,
    max: 2048,
    // Checked with the address it resolves to (webhooks.url-policy.ts); written here so that the document says it.
    jsonSchemaAlso: {
      format: "uri",
      pattern: "^https://",
      description:
        "An `https://` URL whose host resolves to a public address (an operator may allow `http://` and private addresses for development).",
    },
  },
  signature: signatureRule(
    "How requests are signed: `hmac` (the default) or `ed25519`, which adds a `v1a` signature verified with the subscription's `publicKey`.",
  ),
  ordering: orderingRule,
} as const;
export interface SubscribeParams {
  event: EventName;
  url: string;
  signature?: SignatureScheme;
  ordering?: Ordering;
}

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = PageQuery;

export const idParams = { $$strict: true, id } as const;
export interface IdParams {
  id: number;
}

/** Whether the calendar has this day (the pattern lets 31 through in every month; Date would roll it over). */
function isCalendarDay(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split("-").map(Number);
  return new Date(Date.UTC(2000, month - 1, day)).getUTCDate() === day && (month !== 2 || day < 29 || isLeap(year));
}
const isLeap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);

const RFC_3339 =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/** RFC 3339 with a time zone, e.g. `2026-05-01T00:00:00Z`, on a day the calendar has. */
const timestamp = (description: string) =>
  ({
    type: "string",
    // 2026-05-01T00:00:00.000000+00:00, the longest the pattern takes.
    max: 32,
    pattern: RFC_3339,
    custom: (value: unknown, errors: { type: string; actual: unknown }[]) => {
      if (typeof value === "string" && RFC_3339.test(value) && !isCalendarDay(value))
        errors.push({ type: "stringPattern", actual: value });
      return value;
    },
    messages: { stringPattern: "Must be an RFC 3339 date-time with a time zone, e.g. 2026-05-01T00:00:00Z." },
    jsonSchemaAlso: { format: "date-time", description },
  }) as const;

export const STATS_WINDOWS = ["24h", "7d"] as const;
export type StatsWindow = (typeof STATS_WINDOWS)[number];
export const STATS_BUCKETS = ["hour", "day"] as const;
export type StatsBucket = (typeof STATS_BUCKETS)[number];

/** `GET /webhooks/{id}/stats?window=&bucket=` (webhooks.stats.ts). */
export const statsParams = {
  $$strict: true,
  id,
  window: optional({
    type: "enum",
    values: [...STATS_WINDOWS],
    messages: { enumValue: `Must be one of ${STATS_WINDOWS.join(", ")}.` },
    jsonSchemaAlso: { default: "24h", description: "The window the figures and the series cover, up to now." },
  }),
  bucket: optional({
    type: "enum",
    values: [...STATS_BUCKETS],
    messages: { enumValue: `Must be one of ${STATS_BUCKETS.join(", ")}.` },
    jsonSchemaAlso: {
      description: "The series' step, in UTC: `hour` (the default for `24h`) or `day` (the default for `7d`).",
    },
  }),
} as const;
export interface StatsParams {
  id: number;
  window?: StatsWindow;
  bucket?: StatsBucket;
}

export const SEARCH_ORDERS = ["asc", "desc"] as const;
export type SearchOrder = (typeof SEARCH_ORDERS)[number];
const DELIVERED_EVENTS = [...EVENTS, ...SUBSCRIPTION_EVENT_NAMES];

/** The filters of a delivery search (docs/webhooks.md, "Finding a delivery"), all combinable with the cursor. */
const deliverySearchParams = {
  order: optional({
    type: "enum",
    values: [...SEARCH_ORDERS],
    messages: { enumValue: `Must be one of ${SEARCH_ORDERS.join(", ")}.` },
    jsonSchemaAlso: {
      default: "asc",
      description: "`asc`: oldest first (by `createdAt`, then `id`); `desc`: newest first.",
    },
  }),
  since: optional(timestamp("Only deliveries created at or after this time.")),
  until: optional(timestamp("Only deliveries created before this time.")),
  event: optional({
    type: "enum",
    values: DELIVERED_EVENTS,
    messages: { enumValue: "Must be an event name (GET /api/v1/webhooks/available lists them)." },
    jsonSchemaAlso: { description: "Only deliveries of this event (`webhook_test` for tests)." },
  }),
  status: optional({
    type: "enum",
    values: [...DELIVERY_STATUSES],
    messages: { enumValue: `Must be one of ${DELIVERY_STATUSES.join(", ")}.` },
  }),
  webhookId: optional({
    ...identifier(100),
    jsonSchemaAlso: {
      description:
        "Only the deliveries with this `webhook-id` (`msg_…`), as its receiver logged it: one event's, one per subscription that received it.",
    },
  }),
  ...pageParams,
} as const;
export interface DeliverySearchParams extends PageQuery {
  order?: SearchOrder;
  since?: string;
  until?: string;
  event?: DeliveredEventName;
  status?: DeliveryStatus;
  webhookId?: string;
}

export const deliveriesParams = { $$strict: true, id, ...deliverySearchParams } as const;
export interface DeliveriesParams extends DeliverySearchParams {
  id: number;
}

/** The same search across every subscription of the caller. */
export const allDeliveriesParams = { $$strict: true, ...deliverySearchParams } as const;
export type AllDeliveriesParams = DeliverySearchParams;

/** Delivery ids are `bigint`: up to 2^53−1 (shared/http/params.ts). */
export const redeliverParams = { $$strict: true, id, deliveryId: pathId("delivery", BIGINT_ID_MAX) } as const;
export interface RedeliverParams {
  id: number;
  deliveryId: number;
}

export const rotateParams = {
  $$strict: true,
  id,
  signature: signatureRule(
    "Switch the signature scheme with this rotation; left out, the subscription keeps its scheme (an `ed25519` one gets a new key pair).",
  ),
} as const;
export interface RotateParams {
  id: number;
  signature?: SignatureScheme;
}

/**
 * PATCH /webhooks/{id}: each field given is changed, at least one (checked by the action, naming
 * the body). `headers` is a change, not the whole set: a value sets a header, `null` removes it;
 * reserved names and the limit of 10 are checked by the action (webhooks.custom-headers.ts).
 */
export const updateParams = {
  $$strict: true,
  id,
  url: optional(subscribeParams.url),
  description: {
    type: "string",
    trim: true,
    max: 500,
    optional: true,
    nullable: true,
    jsonSchemaAlso: { description: "What this subscription is for, shown with it; `null` clears it." },
  },
  headers: optional({
    type: "record",
    key: { type: "string", min: 1, max: 100, pattern: HEADER_NAME },
    value: { type: "string", min: 1, max: 1000, pattern: HEADER_VALUE, nullable: true },
    jsonSchemaAlso: {
      description: `Custom request headers sent with every delivery: a value sets one, \`null\` removes it, the others stay. At most ${MAX_CUSTOM_HEADERS}; names this service sets itself (\`webhook-*\`, \`X-WEBHOOK-*\`, \`Content-Type\`, \`User-Agent\`, trace headers) and hop-by-hop or framing ones (\`Connection\`, \`Host\`, \`Content-Length\`...) are refused. The values are stored encrypted and never shown again.`,
    },
  }),
  rateLimit: {
    type: "number",
    integer: true,
    min: 1,
    max: 1000,
    optional: true,
    nullable: true,
    jsonSchemaAlso: {
      description:
        "Deliveries per second this subscription's endpoint accepts, held across every webhooks process; `null` for no limit.",
    },
  },
  ordering: orderingRule,
} as const;
export interface UpdateParams {
  id: number;
  url?: string;
  description?: string | null;
  headers?: HeaderChanges;
  rateLimit?: number | null;
  ordering?: Ordering;
}

export const recoverParams = {
  $$strict: true,
  id,
  since: timestamp("Deliveries created at or after this time are recovered."),
  until: optional(
    timestamp("Deliveries created before this time are recovered; left out, up to when the recovery is asked for."),
  ),
  all: optional({
    type: "boolean",
    jsonSchemaAlso: {
      description:
        "`true`: every delivery of the window, the successful ones too; by default only those that did not succeed.",
    },
  }),
} as const;
export interface RecoverParams {
  id: number;
  since: string;
  until?: string;
  all?: boolean;
}

export const recoveryParams = { $$strict: true, id, recoveryId: pathId("recovery", BIGINT_ID_MAX) } as const;
export interface RecoveryParams {
  id: number;
  recoveryId: number;
}

/** GET /api/v1/events (webhooks.feed.ts). A forged `after` is a 422 naming it before any query runs. */
export const feedParams = {
  $$strict: true,
  after: optional({
    type: "string",
    min: 1,
    max: 100,
    custom: (value: unknown, errors: { type: string; actual: unknown; message?: string }[]) => {
      if (typeof value === "string" && decodeFeedCursor(value) === null)
        errors.push({ type: "cursor", actual: value, message: "This cursor is not one the API returned." });
      return value;
    },
    jsonSchemaAlso: {
      pattern: "^[A-Za-z0-9_-]+$",
      description:
        'Opaque: the `after` of a `Link: rel="next"` URL, as given. Left out: from the oldest event kept (WEBHOOK_RETENTION).',
    },
  }),
  event: optional({
    type: "enum",
    values: [...EVENTS],
    messages: {
      enumValue: `Unknown event: GET ${API_PREFIX}/webhooks/available lists the events you may receive.`,
    },
    jsonSchemaAlso: { description: "Only events of this name." },
  }),
  limit: pageParams.limit,
} as const;
export interface FeedParams {
  after?: string;
  event?: EventName;
  limit?: number;
}
