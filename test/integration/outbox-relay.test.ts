import { BROADCASTS, channelOf, type DomainEvent } from "../../shared/messaging/events";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";

const until = async (done: () => boolean | Promise<boolean>, timeoutMs = EVENTUALLY_MS) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe("outbox relay", () => {
  let t: TestBroker;
  let source: EventSource;

  beforeAll(async () => {
    t = await startTestBroker({ services: [], env: { OUTBOX_RELAY_INTERVAL_MS: "20" } });
    source = await addEventSource(t.broker, "relay_it_source");
  });
  afterAll(() => t?.stop());

  it("when no consumer takes the event yet, then it stays in the outbox, and is published once one subscribes", async () => {
    await source.emit([{ event: "sales_order_cancelled", ownerClientId: 7, data: { n: 1 } }]);
    await new Promise((r) => setTimeout(r, 200));
    expect(await source.unpublished()).toBe(1);

    const received: DomainEvent[] = [];
    t.broker.createService({
      name: "relay-test-consumer",
      channels: {
        [channelOf("sales_order_cancelled")]: {
          handler(payload) {
            received.push(payload as DomainEvent);
          },
        },
      },
    });
    await until(async () => (await source.unpublished()) === 0);
    expect(received).toEqual([
      expect.objectContaining({
        event: "sales_order_cancelled",
        ownerClientId: 7,
        data: { n: 1 },
        id: expect.stringMatching(/^relay_it_source-\d+$/),
      }),
    ]);
  });

  it("when the consumer fails, then the event is not marked published and is offered again until it succeeds", async () => {
    let calls = 0;
    t.broker.createService({
      name: "relay-test-flaky",
      channels: {
        [channelOf("sales_order_created")]: {
          handler() {
            calls += 1;
            if (calls < 3) throw new Error("not now");
          },
        },
      },
    });
    await t.broker.waitForServices(["relay-test-flaky"]);
    await source.emit([{ event: "sales_order_created", ownerClientId: 7, data: { n: 2 } }]);
    await until(async () => (await source.unpublished()) === 0);
    expect(calls).toBe(3);
  });

  it("when no webhook subscription listens to an event, then it is settled unpublished, and published once one does", async () => {
    const received: DomainEvent[] = [];
    t.broker.createService({
      name: "relay-test-validated",
      channels: {
        [channelOf("sales_order_validated")]: {
          handler(payload) {
            received.push(payload as DomainEvent);
          },
        },
      },
    });
    // The webhooks service as the relays see it: who listens to what.
    let listened: string[] = [];
    t.broker.createService({ name: "webhooks", actions: { listenedEvents: () => listened } });
    await t.broker.waitForServices(["relay-test-validated", "webhooks"]);

    await source.emit([{ event: "sales_order_validated", ownerClientId: 7, data: { n: 3 } }]);
    await until(async () => (await source.unpublished()) === 0);
    // Had it been published, the in-process channel would have handed it over before settling.
    expect(received).toEqual([]);

    listened = ["sales_order_validated"];
    await t.broker.broadcast(BROADCASTS.subscriptionsChanged.name, {});
    await source.emit([{ event: "sales_order_validated", ownerClientId: 7, data: { n: 4 } }]);
    await until(async () => (await source.unpublished()) === 0);
    expect(received.map((e) => e.data)).toEqual([{ n: 4 }]);
  });
});
