/**
 * When the dispatcher looks for queued deliveries at once (webhooks.dispatcher.ts `queued`):
 * a fresh event whose delivery to a full endpoint (a hanging one holding its slot) was stored
 * due must not hold back the next events' deliveries to everyone else. No database: the slots
 * and the reservations are the dispatcher's own state; its claims fail and are retried later.
 */
import type { Knex } from "knex";
import type { Service } from "moleculer";
import { Dispatcher } from "../../services/webhooks/webhooks.dispatcher";
import type { SubscriptionHealth } from "../../services/webhooks/webhooks.subscription-health";
import type { ClaimedDelivery } from "../../services/webhooks/webhooks.deliveries.repository";
import type { AttemptOutcome } from "../../services/webhooks/webhooks.sender";

const HANGING = "http://hanging.example:8080";
const HEALTHY = "http://healthy.example:8080";

/** Any use of the database fails, as an unreachable one would. */
const noDatabase = new Proxy(() => undefined, {
  get: () => {
    throw new Error("no database in this test");
  },
  apply: () => {
    throw new Error("no database in this test");
  },
}) as unknown as Knex;

const quietLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
} as unknown as Service["logger"];

function delivery(id: number, endpoint: string): ClaimedDelivery {
  return {
    id,
    subscription_id: id,
    endpoint,
    url: `${endpoint}/hook`,
    event: "sales_order_validated",
    body: "{}",
    webhook_id: `msg_${id}`,
    attempt_count: 0,
    claim_token: "token",
    key: "k",
    secret: "s",
    signing_key: null,
    previous_key: null,
    previous_secret: null,
    previous_signing_key: null,
    request_id: null,
    traceparent: null,
    client_id: 1,
    owner_client_id: 1,
  } as unknown as ClaimedDelivery;
}

describe("webhooks dispatcher: fresh deliveries stored due", () => {
  let answerHanging: (outcome: AttemptOutcome) => void = () => undefined;
  const dispatcher = new Dispatcher({
    db: noDatabase,
    logger: quietLogger,
    send: (w) =>
      w.url.startsWith(HANGING)
        ? new Promise<AttemptOutcome>((resolve) => (answerHanging = resolve))
        : Promise.resolve({ kind: "delivered", statusCode: 200, durationMs: 1 }),
    entitledOnly: async (claimed) => claimed,
    batch: 10,
    endpointConcurrency: 1,
    // One claim at start (it fails: no database), then none unless woken.
    intervalMs: 60_000,
    timeoutMs: 10_000,
    retry: { scheduleSeconds: [5], retryAfterMaxMs: 60_000 },
    health: { afterAttempts: async () => [] } as unknown as SubscriptionHealth,
  });

  beforeAll(async () => {
    dispatcher.start();
    // The hanging endpoint's one slot is held by an attempt that does not end.
    const held = await dispatcher.reserve([{ id: 1, endpoint: HANGING }]);
    expect(held.subscriptionIds).toEqual([1]);
    void held.settle([delivery(1, HANGING)]);
  });
  afterAll(async () => {
    answerHanging({ kind: "timeout", error: "test over", durationMs: 10_000 });
    await dispatcher.stop();
  });

  it("when the queued delivery's endpoint has no slot free, then the next event's deliveries to other endpoints are still sent at once", async () => {
    dispatcher.queued([HANGING]);
    const next = await dispatcher.reserve([
      { id: 2, endpoint: HEALTHY },
      { id: 3, endpoint: HANGING },
    ]);
    expect(next.subscriptionIds).toEqual([2]);
    await next.settle([]);
  });

  it("when the queued delivery's endpoint has a slot free, then it is looked for first: the next event's deliveries wait their turn", async () => {
    dispatcher.queued([HANGING, HEALTHY]);
    const next = await dispatcher.reserve([{ id: 4, endpoint: HEALTHY }]);
    expect(next.subscriptionIds).toEqual([]);
    await next.settle([]);
  });
});
