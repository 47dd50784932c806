/**
 * Issue 25, part 2: `GET /webhooks/{id}/stats?window=&bucket=` serves a subscription's attempts
 * bucket by bucket (UTC hours over 24 h, days over 7 days): attempts, success rate, p50/p95
 * latency, empty buckets as zeros. Real attempts to a real receiver, some moved back in time.
 */
import type { Knex } from "knex";
import type { Principal, RequestMeta } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { EVENTS } from "../../shared/messaging/events";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS, EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

interface Point {
  start: string;
  attempts: number;
  succeeded: number;
  successRate: number | null;
  latencyMs: { p50: number; p95: number } | null;
}
interface Stats {
  window: { hours: number; attempts: number };
  series: { bucket: string; points: Point[] };
}

const HOUR = 3_600_000;

describe("webhooks: the stats series of a subscription", () => {
  let t: TestBroker;
  let source: EventSource;
  let receiver: WebhookReceiver;
  let db: Knex;
  const owner: Principal = {
    ...principal("partner", ["partner", "orders:write", "orders:read", "webhooks"]),
    webhookEvents: [...EVENTS],
  };
  let subscriptionId: number;
  /** When the two successes were moved to. */
  let threeHoursAgoAt = 0;

  const call = <T>(action: string, params: object) =>
    t.broker.call<T, object>(action, params, { meta: { client: owner } satisfies RequestMeta });

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_TIMEOUT_MS: String(ANSWER_WITHIN_MS),
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
        WEBHOOK_RETRY_SCHEDULE: "3600",
      },
    });
    source = await addEventSource(t.broker, "webhooks_stats_series_source");
    receiver = await startReceiver((r) => ((JSON.parse(r.body) as { seq: number }).seq % 4 === 0 ? 500 : 200));
    db = openDatabase(t.database.url);
    subscriptionId = (
      await call<{ id: number }>("webhooks.subscribe", {
        event: "sales_order_created",
        url: `${receiver.url}/series`,
      })
    ).id;
    // Eight events: seq 4 and 8 are answered 500 (their retry waits an hour), the others 200.
    await source.emit(
      Array.from({ length: 8 }, (_, i) => ({
        event: "sales_order_created",
        ownerClientId: owner.clientId,
        data: { seq: i + 1 },
      })),
    );
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const [{ count }] = await db.withSchema("webhooks").table("attempts").count<{ count: string }[]>();
      if (Number(count) >= 8) break;
      if (Date.now() > deadline) throw new Error(`only ${count} attempts recorded`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Two successes moved to three hours ago, one to three days ago (their deliveries with them).
    const attempts: { id: number; delivery_id: number }[] = await db
      .withSchema("webhooks")
      .table("attempts")
      .whereBetween("status_code", [200, 299])
      .orderBy("id")
      .select("id", "delivery_id");
    const move = async (ids: { id: number; delivery_id: number }[], agoMs: number) => {
      const at = new Date(Date.now() - agoMs);
      await db
        .withSchema("webhooks")
        .table("attempts")
        .whereIn(
          "id",
          ids.map((a) => a.id),
        )
        .update({ attempted_at: at });
      await db
        .withSchema("webhooks")
        .table("deliveries")
        .whereIn(
          "id",
          ids.map((a) => a.delivery_id),
        )
        .update({ updated_at: at });
      return at.getTime();
    };
    threeHoursAgoAt = await move(attempts.slice(0, 2), 3 * HOUR);
    await move(attempts.slice(2, 3), 3 * 24 * HOUR);
  });
  afterAll(async () => {
    await db?.destroy();
    await t?.stop();
    await receiver?.close();
  });

  it("when the last 24 hours are asked for, then there are 24 hourly buckets, the current one last, holding the recent attempts with their success rate and latency", async () => {
    const before = Date.now();
    const stats = await call<Stats>("webhooks.stats", { id: subscriptionId });
    const after = Date.now();
    const { points } = stats.series;
    expect(stats.series.bucket).toBe("hour");
    expect(points).toHaveLength(24);
    // The current hour is last (the call may straddle an hour's turn: either side is right).
    expect([before, after].map((t) => Math.floor(t / HOUR) * HOUR)).toContain(Date.parse(points[23].start));
    for (let i = 1; i < points.length; i++)
      expect(Date.parse(points[i].start) - Date.parse(points[i - 1].start)).toBe(HOUR);

    // Where the attempts left in place fell: 5 (3 successes, 2 failures); three hours before: 2 successes; the one of three days ago is out.
    const [{ latest }] = await db
      .withSchema("webhooks")
      .table("attempts")
      .max<{ latest: Date }[]>("attempted_at as latest");
    const now = new Date(latest).getTime();
    const bucketOf = (t: number) => points.find((p) => Date.parse(p.start) === Math.floor(t / HOUR) * HOUR)!;
    const current = bucketOf(now);
    expect(current).toMatchObject({ attempts: 5, succeeded: 3, successRate: 3 / 5 });
    expect(current.latencyMs!.p95).toBeGreaterThanOrEqual(current.latencyMs!.p50);
    const threeHoursAgo = bucketOf(threeHoursAgoAt);
    expect(threeHoursAgo).toMatchObject({ attempts: 2, succeeded: 2, successRate: 1 });
    expect(points.reduce((n, p) => n + p.attempts, 0)).toBe(7);
    expect(points.filter((p) => p.attempts === 0).every((p) => p.successRate === null && p.latencyMs === null)).toBe(
      true,
    );
    expect(stats.window).toMatchObject({ hours: 24, attempts: 7 });
  });

  it("when 7 days are asked for, then there are 7 daily buckets holding every attempt, and hourly ones on demand", async () => {
    const stats = await call<Stats>("webhooks.stats", { id: subscriptionId, window: "7d" });
    expect(stats.window).toMatchObject({ hours: 168, attempts: 8 });
    expect(stats.series.bucket).toBe("day");
    expect(stats.series.points).toHaveLength(7);
    expect(stats.series.points.reduce((n, p) => n + p.attempts, 0)).toBe(8);
    expect(stats.series.points.every((p) => p.start.endsWith("T00:00:00.000Z"))).toBe(true);

    const hourly = await call<Stats>("webhooks.stats", { id: subscriptionId, window: "7d", bucket: "hour" });
    expect(hourly.series.points).toHaveLength(168);
  });

  it("when a window or bucket is not one of those offered, then the request is refused naming the field", async () => {
    await expect(call("webhooks.stats", { id: subscriptionId, window: "30d" })).rejects.toMatchObject({
      code: 422,
      data: [expect.objectContaining({ field: "window" })],
    });
    await expect(call("webhooks.stats", { id: subscriptionId, bucket: "minute" })).rejects.toMatchObject({
      code: 422,
    });
  });
});
