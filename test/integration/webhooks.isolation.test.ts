/**
 * One client's hanging endpoint must not slow another client's deliveries: real receivers, one
 * that accepts connections and never answers, one healthy, and a dispatcher with few slots so
 * that, without per-endpoint caps, the hanging endpoint would hold all of them.
 */
import type { Knex } from "knex";
import type { Principal } from "../../shared/security/auth";
import { openDatabase } from "../../shared/database/db";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { ANSWER_WITHIN_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(90_000);

/** The healthy client's 30 deliveries, answered a few at a time, must all land within it on a busy machine. */
const TIMEOUT_MS = 2 * ANSWER_WITHIN_MS;
const BATCH = 10;
const PER_ENDPOINT = 3;
const NOISY_EVENTS = 30;
const QUIET_EVENTS = 30;

interface AttemptRow {
  attempted_at: Date;
  duration_ms: number;
  status_code: number | null;
}

describe("webhooks: a hanging endpoint among healthy ones", () => {
  let t: TestBroker;
  let source: EventSource;
  let db: Knex;
  let hanging: WebhookReceiver;
  let healthy: WebhookReceiver;
  const partner = (): Principal => ({
    ...principal("partner", ["partner", "webhooks"]),
    webhookEvents: ["sales_order_validated"],
  });
  const noisy = partner();
  const quiet = partner();
  let noisySubscription: number;

  const subscribe = async (client: Principal, url: string) =>
    (
      await t.broker.call<{ id: number }, object>(
        "webhooks.subscribe",
        { event: "sales_order_validated", url: `${url}/hook` },
        { meta: { client } },
      )
    ).id;

  const emit = (client: Principal, from: number, count: number) =>
    source.emit(
      Array.from({ length: count }, (_, i) => ({
        event: "sales_order_validated" as const,
        ownerClientId: client.clientId,
        data: { seq: from + i },
      })),
    );

  /** The noisy subscription's recorded attempts, oldest first: one is recorded only once it ended. */
  const noisyAttempts = async (): Promise<AttemptRow[]> =>
    db
      .withSchema("webhooks")
      .table("attempts as a")
      .join("deliveries as d", "d.id", "a.delivery_id")
      .where("d.subscription_id", noisySubscription)
      .orderBy("a.attempted_at")
      .select<AttemptRow[]>("a.attempted_at", "a.duration_ms", "a.status_code");

  async function waitFor(done: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_DISPATCH_BATCH: String(BATCH),
        WEBHOOK_ENDPOINT_CONCURRENCY: String(PER_ENDPOINT),
        WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1,1,1,1",
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_isolation_source");
    db = openDatabase(t.database.url);
    hanging = await startReceiver(() => "hang");
    healthy = await startReceiver();
    noisySubscription = await subscribe(noisy, hanging.url);
    await subscribe(quiet, healthy.url);
  });
  afterAll(async () => {
    await t?.stop();
    await hanging?.close();
    await healthy?.close();
  });

  it("when one endpoint hangs, then another client's deliveries all arrive before its first attempt times out, and it is then tried one at a time until it answers", async () => {
    // The hanging endpoint's backlog comes first and takes every slot it is allowed.
    await emit(noisy, 0, NOISY_EVENTS);
    await hanging.waitFor((r) => r.length >= PER_ENDPOINT, 30_000);

    await emit(quiet, 0, QUIET_EVENTS);
    await healthy.waitFor((r) => r.length >= QUIET_EVENTS, 30_000);
    // Every healthy delivery arrived while the hanging endpoint still held its slots: none of
    // its attempts has ended yet, and it never got more than its cap.
    expect(await noisyAttempts()).toEqual([]);
    expect(hanging.received).toHaveLength(PER_ENDPOINT);
    expect(new Set(healthy.received.map((r) => (JSON.parse(r.body) as { seq: number }).seq)).size).toBe(QUIET_EVENTS);

    // On probation after its time-outs: one probe at a time, never overlapping another attempt.
    await waitFor(
      async () => (await noisyAttempts()).length >= PER_ENDPOINT + 2,
      "two probes of the hanging endpoint to time out",
    );
    const probes = (await noisyAttempts()).slice(PER_ENDPOINT);
    const earlier = (await noisyAttempts()).slice(0, PER_ENDPOINT);
    let lastEnd = Math.max(...earlier.map((a) => a.attempted_at.getTime() + a.duration_ms));
    for (const probe of probes) {
      expect(probe.status_code).toBeNull();
      // A millisecond of rounding: attempted_at is taken just before the request is sent.
      expect(probe.attempted_at.getTime()).toBeGreaterThanOrEqual(lastEnd - 2);
      lastEnd = probe.attempted_at.getTime() + probe.duration_ms;
    }
    // The healthy client's new deliveries still flow while the probe hangs.
    await emit(quiet, QUIET_EVENTS, 10);
    await healthy.waitFor((r) => r.length >= QUIET_EVENTS + 10, 30_000);

    // Once the endpoint answers again, probation ends and its backlog is delivered.
    hanging.answerWith(() => 200);
    await waitFor(async () => {
      const row = (await db
        .withSchema("webhooks")
        .table("deliveries")
        .where({ subscription_id: noisySubscription, status: "succeeded" })
        .count({ n: "*" })
        .first()) as { n: string | number };
      return Number(row.n) === NOISY_EVENTS;
    }, "every delivery of the recovered endpoint to succeed");
  });
});
