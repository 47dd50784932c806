/**
 * Retention (docs/webhooks.md, "Retention"; docs/operations.md, "Retention and sizes"): settled
 * deliveries older than WEBHOOK_RETENTION go with their attempts and then their events, pending
 * ones and recently settled ones stay; sent outbox rows older than OUTBOX_RETENTION go, unsent
 * ones stay; a job claims its run once per interval across replicas; batches stop at 1,000 rows.
 */
import type { Knex } from "knex";
import type { Principal, RequestMeta } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { renderMetrics } from "../../shared/observability/metrics";
import { pruneSentEvents } from "../../shared/messaging/outbox";
import { claimJobRun, PRUNE_BATCH } from "../../shared/database/periodic-job";
import {
  pruneSettledDeliveries,
  pruneWebhooks,
  webhooksRetentionJob,
} from "../../services/webhooks/webhooks.retention";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const SOURCE = "webhooks_retention_source";

describe("webhook and outbox retention", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const owner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  const W = () => db.withSchema("webhooks");
  const count = async (table: string, schema = "webhooks") =>
    Number(((await db.withSchema(schema).table(table).count({ n: "*" }).first()) as { n: string }).n);

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: { WEBHOOK_RETRY_SCHEDULE: "600", WEBHOOK_DISPATCH_INTERVAL_MS: "50", OUTBOX_RELAY_INTERVAL_MS: "50" },
    });
    source = await addEventSource(t.broker, SOURCE);
    receiver = await startReceiver();
    db = openDatabase(t.database.url);
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("when deliveries settled longer ago than the retention, then they go with their attempts and events; pending, recent and still-needed ones stay", async () => {
    receiver.answerWith((r) => (r.path === "/fails" ? 500 : 200));
    const meta: RequestMeta = { client: owner };
    const ok = await t.broker.call<{ id: number }, object>(
      "webhooks.subscribe",
      { event: "sales_order_created", url: `${receiver.url}/ok` },
      { meta },
    );
    const fails = await t.broker.call<{ id: number }, object>(
      "webhooks.subscribe",
      { event: "sales_order_created", url: `${receiver.url}/fails` },
      { meta },
    );
    await source.emit(
      [1, 2, 3].map((seq) => ({ event: "sales_order_created" as const, ownerClientId: owner.clientId, data: { seq } })),
    );
    // Every event reached both: 3 succeeded on /ok, 3 pending (a retry in 10 minutes) on /fails.
    await receiver.waitFor(
      (all) => all.filter((r) => r.path === "/ok").length === 3 && all.filter((r) => r.path === "/fails").length === 3,
      EVENTUALLY_MS,
    );
    await waitUntil(
      async () =>
        Number(
          (
            (await W()
              .table("deliveries")
              .where({ subscription_id: ok.id, status: "succeeded" })
              .count({ n: "*" })
              .first()) as { n: string }
          ).n,
        ) === 3,
    );

    const okDeliveries = await W()
      .table("deliveries")
      .where({ subscription_id: ok.id })
      .orderBy("id")
      .select<{ id: string | number; event_id: string }[]>("id", "event_id");
    const [oldOk, recentOk] = okDeliveries.map((d) => d.id);
    // The same event's delivery on /fails (events are fanned out concurrently: ids need not follow the events' order).
    const [oldFailed] = await W()
      .table("deliveries")
      .where({ subscription_id: fails.id, event_id: okDeliveries[0].event_id })
      .pluck<(string | number)[]>("id");
    const longAgo = db.raw("now() - interval '31 days'");
    // Aged: one success (its event also needed by a pending delivery), one failed settled long ago, and every event.
    await W().table("deliveries").whereIn("id", [oldOk]).update({ updated_at: longAgo, created_at: longAgo });
    await W()
      .table("deliveries")
      .whereIn("id", [oldFailed])
      .update({ status: "failed", next_attempt_at: null, updated_at: longAgo, created_at: longAgo });
    await W().table("events").update({ received_at: longAgo });
    // A success settled 29 days ago stays.
    await W()
      .table("deliveries")
      .where({ id: recentOk })
      .update({ updated_at: db.raw("now() - interval '29 days'") });
    const attemptsBefore = await count("attempts");

    const pruned = await pruneWebhooks(db, RETENTION_MS);

    expect(pruned).toEqual({ deliveries: 2, attempts: 2, events: 1, recoveries: 0 });
    const left = await W()
      .table("deliveries")
      .orderBy("id")
      .select<{ id: string | number; status: string }[]>("id", "status");
    expect(left.map((d) => d.id)).not.toContain(oldOk);
    expect(left.map((d) => d.id)).not.toContain(oldFailed);
    expect(left).toHaveLength(4);
    expect(await count("attempts")).toBe(attemptsBefore - 2);
    // The first event lost both its deliveries; the others are still needed.
    expect(await count("events")).toBe(2);
    expect(await pruneWebhooks(db, RETENTION_MS)).toEqual({ deliveries: 0, attempts: 0, events: 0, recoveries: 0 });
  });

  it("when several subscriptions have settled deliveries past the retention, then each batch stops at its limit and every subscription's go", async () => {
    const meta: RequestMeta = { client: owner };
    const subscriptions = await Promise.all(
      ["/batch-a", "/batch-b", "/batch-c"].map((path) =>
        t.broker.call<{ id: number }, object>(
          "webhooks.subscribe",
          { event: "sales_order_validated", url: `${receiver.url}${path}` },
          { meta },
        ),
      ),
    );
    // Three settled long ago and one pending (as old) per subscription; the pending ones stay.
    const ids = subscriptions.map((s) => s.id);
    await db.raw(
      `WITH d AS (
         INSERT INTO webhooks.deliveries (subscription_id, event_id, webhook_id, status, attempt_count, created_at, updated_at)
         SELECT s, 'batch-' || s || '-' || g, 'msg_batch_' || s || '_' || g, CASE WHEN g = 4 THEN 'pending' ELSE 'succeeded' END,
                1, now() - interval '40 days', now() - interval '40 days'
           FROM unnest(?::int[]) s CROSS JOIN generate_series(1, 4) g
         RETURNING id, created_at
       )
       INSERT INTO webhooks.attempts (delivery_id, attempted_at, status_code, duration_ms) SELECT id, created_at, 200, 1 FROM d`,
      [ids],
    );

    const batches: number[] = [];
    for (let pruned = -1; pruned !== 0 && batches.length < 10;) {
      pruned = (await pruneSettledDeliveries(db, RETENTION_MS, 4)).deliveries;
      batches.push(pruned);
    }

    expect(batches).toEqual([4, 4, 1, 0]);
    const left = await W().table("deliveries").whereIn("subscription_id", ids).select<{ status: string }[]>("status");
    expect(left.map((d) => d.status)).toEqual(["pending", "pending", "pending"]);
    await W()
      .table("attempts")
      .whereIn("delivery_id", W().table("deliveries").whereIn("subscription_id", ids).select("id"))
      .delete();
    await W().table("deliveries").whereIn("subscription_id", ids).delete();
  });

  it("when recoveries finished longer ago than the retention, then they go; recent and unfinished ones stay", async () => {
    const [subscriptionId] = await W().table("subscriptions").orderBy("id").limit(1).pluck<number[]>("id");
    const recovery = (status: string, finishedDaysAgo: number | null) => ({
      subscription_id: subscriptionId,
      since: db.raw("now() - interval '40 days'"),
      until: db.raw("now() - interval '35 days'"),
      all_deliveries: false,
      status,
      finished_at: finishedDaysAgo === null ? null : db.raw(`now() - interval '${finishedDaysAgo} days'`),
    });
    const ids = await W()
      .table("recoveries")
      .insert([recovery("done", 31), recovery("done", 29), recovery("queued", null)])
      .returning<{ id: string | number }[]>("id");

    const pruned = await pruneWebhooks(db, RETENTION_MS);

    expect(pruned.recoveries).toBe(1);
    const left = await W().table("recoveries").orderBy("id").pluck<(string | number)[]>("id");
    expect(left.map(String)).toEqual(ids.slice(1).map((r) => String(r.id)));
    await W().table("recoveries").delete();
  });

  it("when sent outbox rows are older than the retention, then they go in batches of 1,000 and unsent rows stay", async () => {
    const sentLongAgo = db.raw("now() - interval '8 days'");
    const rows = Array.from({ length: PRUNE_BATCH + 5 }, (_, i) => ({
      event: "sales_order_created",
      owner_client_id: 1,
      entity: "order",
      entity_id: i,
      data: "{}",
      published_at: sentLongAgo,
    }));
    await db.withSchema(SOURCE).table("outbox").insert(rows);
    // Unsent, and held by a claim so that the running relay leaves it alone.
    await db
      .withSchema(SOURCE)
      .table("outbox")
      .insert({
        event: "sales_order_created",
        owner_client_id: 1,
        entity: "order",
        entity_id: 0,
        data: "{}",
        claimed_until: db.raw("now() + interval '1 hour'"),
      });
    const unsent = await source.unpublished();
    expect(unsent).toBe(1);

    expect(await pruneSentEvents(db, SOURCE, 7 * DAY_MS, PRUNE_BATCH)).toBe(PRUNE_BATCH);
    expect(await pruneSentEvents(db, SOURCE, 7 * DAY_MS, PRUNE_BATCH)).toBeGreaterThanOrEqual(5);
    expect(await pruneSentEvents(db, SOURCE, 7 * DAY_MS, PRUNE_BATCH)).toBe(0);
    expect(await source.unpublished()).toBe(1);
  });

  it("when several replicas check the same job, then one claims this interval's run and the others wait for the next", async () => {
    const claims = await Promise.all([1, 2, 3, 4].map(() => claimJobRun(db, "webhooks", "retention test job", 60_000)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await claimJobRun(db, "webhooks", "retention test job", 60_000)).toBe(false);
    await W()
      .table("job_runs")
      .where({ job: "retention test job" })
      .update({ started_at: db.raw("now() - interval '61 seconds'") });
    expect(await claimJobRun(db, "webhooks", "retention test job", 60_000)).toBe(true);
  });

  it("when the retention job runs, then /metrics counts the rows it pruned by table", async () => {
    await W().table("job_runs").del();
    await W()
      .table("deliveries")
      .update({ status: "cancelled", next_attempt_at: null, updated_at: db.raw("now() - interval '31 days'") });
    const job = webhooksRetentionJob({ db, logger: t.broker.logger, retentionMs: RETENTION_MS, everyMs: 3_600_000 });
    expect(await job.runIfDue()).toBe(true);
    expect(await job.runIfDue()).toBe(false);
    const { body } = await renderMetrics(t.broker);
    expect(
      Number(/^retention_rows_pruned_total\{table="webhooks.deliveries"\} (\d+)/m.exec(body)?.[1]),
    ).toBeGreaterThanOrEqual(4);
    expect(await count("deliveries")).toBe(0);
  });
});

async function waitUntil(done: () => Promise<boolean>, timeoutMs = EVENTUALLY_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error("Timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}
