import { Writable } from "node:stream";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace";
import { trace } from "@opentelemetry/api";
import { ServiceBroker, type Context, type Service } from "moleculer";
import { requestContextMiddleware, requestLogFields } from "../../shared/observability/request-context";
import {
  currentTraceparent,
  recordSpansInto,
  resumeTrace,
  traceContextOf,
  traceLogFields,
  tracingMiddleware,
} from "../../shared/observability/tracing";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe("traceparent parsing", () => {
  it("when a traceparent is well-formed, then it names the caller's trace and span", () => {
    const parent = traceContextOf(TRACEPARENT);
    expect(parent && trace.getSpanContext(parent)).toMatchObject({
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: 1,
      isRemote: true,
    });
  });

  it.each([
    ["empty", ""],
    ["garbage", "nonsense"],
    ["upper-case hex", TRACEPARENT.toUpperCase()],
    ["a short trace id", `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${SPAN_ID}-01`],
    ["an all-zero span id", `00-${TRACE_ID}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ["version 00 with extra fields", `${TRACEPARENT}-extra`],
    ["not a string", ["a", "b"]],
  ])("when a traceparent is malformed (%s), then it is ignored", (_why, value) => {
    expect(traceContextOf(value)).toBeUndefined();
  });
});

describe("without an exporter (nothing recorded)", () => {
  it("when work resumes under a stored traceparent, then it passes it on unchanged and log lines carry its ids", async () => {
    const seen = await resumeTrace(TRACEPARENT, "stored work", {}, async () => ({
      traceparent: currentTraceparent(),
      log: traceLogFields(),
    }));
    expect(seen).toEqual({ traceparent: TRACEPARENT, log: { trace_id: TRACE_ID, span_id: SPAN_ID } });
  });

  it("when there is no traceparent, then there is no trace and log lines carry no trace ids", async () => {
    const seen = await resumeTrace(null, "stored work", {}, async () => ({
      traceparent: currentTraceparent(),
      log: traceLogFields(),
    }));
    expect(seen).toEqual({ traceparent: undefined, log: {} });
  });
});

describe("the tracing middleware, spans recorded", () => {
  const exporter = new InMemorySpanExporter();
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const broker = new ServiceBroker({
    nodeID: "tracing-test",
    logger: { type: "Pino", options: { level: "info", pino: { options: { mixin: requestLogFields }, destination } } },
    middlewares: [requestContextMiddleware, tracingMiddleware],
  });
  broker.createService({
    name: "outer",
    actions: {
      run(ctx: Context) {
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
        return currentTraceparent();
      },
    },
  });
  let stopRecording: () => Promise<void>;

  beforeAll(async () => {
    stopRecording = recordSpansInto(exporter);
    await broker.start();
  });
  afterAll(async () => {
    await broker.stop();
    await stopRecording();
  });
  beforeEach(() => exporter.reset());

  it("when a call comes with ctx.meta.traceparent, then each handler gets a span in that trace, the nested call's under its caller's", async () => {
    const innermost = await broker.call<string, object>("outer.run", {}, { meta: { traceparent: TRACEPARENT } });
    const spans = exporter.getFinishedSpans();
    const outer = spans.find((s) => s.name === "outer.run")!;
    const inner = spans.find((s) => s.name === "inner.work")!;
    expect(outer.spanContext().traceId).toBe(TRACE_ID);
    expect(outer.parentSpanContext?.spanId).toBe(SPAN_ID);
    expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
    expect(innermost).toBe(`00-${TRACE_ID}-${inner.spanContext().spanId}-01`);
    expect(lines.find((l) => l.msg === "inner work done")).toMatchObject({
      trace_id: TRACE_ID,
      span_id: inner.spanContext().spanId,
    });
  });

  it("when a call comes without a traceparent (or a malformed one), then it starts a trace of its own", async () => {
    await broker.call("outer.run", {}, { meta: { traceparent: "00-bad" } });
    const outer = exporter.getFinishedSpans().find((s) => s.name === "outer.run")!;
    expect(outer.parentSpanContext).toBeUndefined();
    expect(outer.spanContext().traceId).not.toBe(TRACE_ID);
  });

  it("when a handler fails, then its span records the error", async () => {
    await expect(
      resumeTrace(null, "failing", {}, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    const failing = exporter.getFinishedSpans().find((s) => s.name === "failing")!;
    expect(failing.status).toMatchObject({ code: 2, message: "boom" });
  });
});
