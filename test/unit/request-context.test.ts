import { Writable } from "node:stream";
import { ServiceBroker, type Context, type Service } from "moleculer";
import {
  currentRequestId,
  requestContextMiddleware,
  requestLogFields,
  withRequestId,
} from "../../shared/observability/request-context";

/** A broker whose pino lines land in `lines`, with the mixin the real config uses. */
function brokerWithCapturedLogs(lines: Record<string, unknown>[]): ServiceBroker {
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return new ServiceBroker({
    nodeID: "request-context-test",
    logger: { type: "Pino", options: { level: "info", pino: { options: { mixin: requestLogFields }, destination } } },
    middlewares: [requestContextMiddleware],
  });
}

describe("request context", () => {
  const lines: Record<string, unknown>[] = [];
  const broker = brokerWithCapturedLogs(lines);
  const seenInEvent: (string | undefined)[] = [];

  broker.createService({
    name: "outer",
    actions: {
      async run(ctx: Context) {
        await ctx.emit("thing.happened", {});
        return ctx.call("inner.work");
      },
    },
  });
  broker.createService({
    name: "inner",
    actions: {
      async work(this: Service) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        this.logger.info("inner work done");
        return currentRequestId();
      },
    },
    events: {
      "thing.happened"() {
        seenInEvent.push(currentRequestId());
      },
    },
  });

  beforeAll(() => broker.start());
  afterAll(() => broker.stop());

  it("when an action is called with a request id, then nested calls and their log lines carry it", async () => {
    const seen = await broker.call("outer.run", {}, { requestID: "req-abc" });
    expect(seen).toBe("req-abc");
    const line = lines.find((l) => l.msg === "inner work done");
    expect(line).toMatchObject({ requestId: "req-abc" });
  });

  it("when an event is emitted while handling a request, then its handler sees the request id", async () => {
    seenInEvent.length = 0;
    await broker.call("outer.run", {}, { requestID: "req-event" });
    expect(seenInEvent).toEqual(["req-event"]);
  });

  it("when work runs outside any request, then its log lines have no request id", () => {
    broker.logger.info("background line");
    const line = lines.find((l) => l.msg === "background line");
    expect(line).toBeDefined();
    expect(line).not.toHaveProperty("requestId");
  });

  it("when later work runs under a stored request id, then it sees that id and none after", async () => {
    const inside = await withRequestId("stored-1", async () => {
      await Promise.resolve();
      return currentRequestId();
    });
    expect(inside).toBe("stored-1");
    expect(currentRequestId()).toBeUndefined();
    expect(withRequestId(null, () => currentRequestId())).toBeUndefined();
  });
});
