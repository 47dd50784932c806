/**
 * Traces, end to end (docs/operations.md, "Traces"): W3C Trace Context in, OpenTelemetry spans
 * out over OTLP. A request's trace starts at the gateway (or continues the caller's
 * `traceparent`), follows every action call, local or over NATS (`ctx.meta.traceparent`,
 * which moleculer carries with the call), and is stored next to `request_id` wherever work
 * outlives the request (an outbox row, a webhook event), so the relay, the webhooks consumer
 * and the delivery attempt continue it; the webhook request carries a `traceparent` of its own.
 *
 * Two modes, chosen at start:
 * - OTEL_EXPORTER_OTLP_ENDPOINT set: a span per HTTP request, action and event handler, relay
 *   publish, channel message and delivery attempt, batched to the collector.
 * - unset: no spans, nothing recorded or exported. An incoming `traceparent` is still passed
 *   along unchanged (the caller's trace and span id) to the webhook request, so a subscriber
 *   can correlate with the caller's trace; without one, a call costs a look-up of the active
 *   context and of ctx.meta: no span, no context scope of its own.
 */
import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context as TraceContext,
  type Span,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  TracerProvider,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";
import {
  ATTR_SERVICE_INSTANCE_ID,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_NAMESPACE,
} from "@opentelemetry/semantic-conventions";
import type { Context, Middleware, ServiceBroker } from "moleculer";

export { SpanKind };

/** What the composition root starts tracing with (runtime/broker.ts). */
export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; spans go to `<endpoint>/v1/traces`. None: nothing is exported. */
  otlpEndpoint: string | null;
  serviceName: string;
  namespace: string;
  nodeId: string;
}

const TRACER_NAME = "order-intake";
const propagator = new W3CTraceContextPropagator();

/** Set while spans are recorded (an exporter is configured); null: the pass-through mode. */
let provider: TracerProvider | null = null;
/** Whether this module made `provider` from the settings (and so shuts it down on stop). */
let providerFromSettings = false;
let contextManagerRegistered = false;

/** Context travels with async work (AsyncLocalStorage) in both modes: stored work reads it. */
function registerContextManager(): void {
  if (contextManagerRegistered) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  contextManagerRegistered = true;
}

function startProvider(processor: SpanProcessor, settings: Omit<TracingSettings, "otlpEndpoint">): void {
  provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: settings.serviceName,
      [ATTR_SERVICE_NAMESPACE]: settings.namespace,
      [ATTR_SERVICE_INSTANCE_ID]: settings.nodeId,
    }),
    spanProcessors: [processor],
  });
}

/**
 * Once per process, before the broker starts. With an endpoint, spans are batched to it; a
 * provider already in place (a test's in-memory exporter, see `recordSpansInto`) is kept.
 */
export function startTracing(settings: TracingSettings): void {
  registerContextManager();
  if (provider || !settings.otlpEndpoint) return;
  const exporter = new OTLPTraceExporter({ url: `${settings.otlpEndpoint.replace(/\/+$/, "")}/v1/traces` });
  startProvider(new BatchSpanProcessor({ exporter }), settings);
  providerFromSettings = true;
}

/** At broker stop: the spans still batched are sent before the process exits. */
export async function stopTracing(): Promise<void> {
  if (!provider || !providerFromSettings) return;
  const stopping = provider;
  provider = null;
  providerFromSettings = false;
  await stopping.shutdown();
}

/** Tests: every span ends up in `exporter` as soon as it ends. Returns the stop. */
export function recordSpansInto(exporter: SpanExporter, serviceName = "test"): () => Promise<void> {
  registerContextManager();
  startProvider(new SimpleSpanProcessor({ exporter }), { serviceName, namespace: "test", nodeId: "test" });
  providerFromSettings = false;
  const started = provider!;
  return async () => {
    if (provider === started) provider = null;
    await started.shutdown();
  };
}

/** The trace context a `traceparent` names; undefined when absent or malformed (W3C: ignore it, start anew). */
export function traceContextOf(traceparent: unknown): TraceContext | undefined {
  if (typeof traceparent !== "string" || traceparent === "") return undefined;
  const extracted = propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
  return trace.getSpanContext(extracted) ? extracted : undefined;
}

/** The `traceparent` of the current span (to store with work that runs later, or to send on); undefined outside a trace. */
export function currentTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagator.inject(context.active(), carrier, defaultTextMapSetter);
  return carrier.traceparent;
}

/** `{ traceparent }` of the current span for an outgoing HTTP request; nothing outside a trace. */
export function traceHeaders(): { traceparent?: string } {
  const traceparent = currentTraceparent();
  return traceparent ? { traceparent } : {};
}

/** Fields every log line gets (pino `mixin`): the trace and span it was written in, if any. */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active())?.spanContext();
  return span && trace.isSpanContextValid(span) ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; none: a new trace (when spans are recorded). */
  parent?: TraceContext;
}

const NO_SPAN = trace.wrapSpanContext({ traceId: "", spanId: "", traceFlags: 0 });

/** A moleculer error with a code below 500 is the caller's mistake, not a failure of the span. */
function isFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return !(typeof code === "number" && code >= 400 && code < 500);
}

/**
 * Runs `work` in a new span (ended when it settles), its parent `opts.parent`. When nothing is
 * recorded, `work` runs under the parent as it came (pass-through), or as it is when none.
 */
export function inSpan<T>(name: string, opts: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  registerContextManager();
  if (!provider) {
    return opts.parent ? context.with(opts.parent, () => work(trace.getSpan(opts.parent!) ?? NO_SPAN)) : work(NO_SPAN);
  }
  const span = provider
    .getTracer(TRACER_NAME)
    .startSpan(name, { kind: opts.kind, attributes: opts.attributes }, opts.parent ?? ROOT_CONTEXT);
  return context
    .with(trace.setSpan(opts.parent ?? ROOT_CONTEXT, span), () => work(span))
    .then(
      (result) => {
        span.end();
        return result;
      },
      (err: unknown) => {
        if (isFailure(err)) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error | null)?.message });
        }
        span.end();
        throw err;
      },
    );
}

/** Stored work (an outbox row, a webhook delivery) resumed in a span under the `traceparent` it was stored with. */
export function resumeTrace<T>(
  traceparent: string | null | undefined,
  name: string,
  opts: Omit<SpanOptions, "parent">,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return inSpan(name, { ...opts, parent: traceContextOf(traceparent) }, work);
}

type Handler = (ctx: Context) => Promise<unknown>;

/**
 * The parent of a handler's span: for a call from another node, the `traceparent` its caller
 * put in ctx.meta (never whatever context the transporter's socket happens to carry); for a
 * local call, the caller's span, which is active (ctx.meta holds a copy of an ancestor's).
 */
function parentOf(ctx: Context, broker: ServiceBroker): TraceContext | undefined {
  const meta = ctx.meta as { traceparent?: unknown } | undefined;
  if (ctx.nodeID && ctx.nodeID !== broker.nodeID) return traceContextOf(meta?.traceparent);
  const active = context.active();
  return trace.getSpan(active) ? active : traceContextOf(meta?.traceparent);
}

function tracedHandler(next: Handler, broker: ServiceBroker, nameOf: (ctx: Context) => string): Handler {
  return function traced(ctx: Context) {
    const parent = parentOf(ctx, broker);
    // Nothing recorded, nothing to pass along: the handler as if there were no tracing.
    if (!provider && !parent) return next(ctx);
    const remote = Boolean(ctx.nodeID && ctx.nodeID !== broker.nodeID);
    const name = nameOf(ctx);
    return inSpan(
      name,
      {
        parent,
        kind: remote ? SpanKind.SERVER : SpanKind.INTERNAL,
        attributes: {
          "rpc.system": "moleculer",
          "rpc.method": name,
          "moleculer.node_id": broker.nodeID,
          ...(ctx.caller ? { "moleculer.caller": ctx.caller } : {}),
        },
      },
      () => next(ctx),
    );
  };
}

/** A call leaving for another node carries the current span as `ctx.meta.traceparent`. */
function withTraceparentInMeta(next: Handler): Handler {
  return function carryTrace(ctx: Context) {
    const traceparent = currentTraceparent();
    if (traceparent) (ctx.meta as { traceparent?: string }).traceparent = traceparent;
    return next(ctx);
  };
}

/** A span per local action and event handler; the trace rides along with remote calls. */
export const tracingMiddleware: Middleware = {
  name: "Tracing",
  localAction: function (this: ServiceBroker, next: Handler, action: { name: string }) {
    return tracedHandler(next, this, () => action.name);
  } as unknown as Middleware["localAction"],
  localEvent: function (this: ServiceBroker, next: Handler, event: { name: string }) {
    return tracedHandler(next, this, () => `event ${event.name}`);
  } as unknown as Middleware["localEvent"],
  remoteAction: (next: Handler) => withTraceparentInMeta(next),
};
