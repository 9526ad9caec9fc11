import { createRequire } from "node:module";
import { context, propagation, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { busWithTraceContext, extractTraceContext, startTracing, traceHeaders, tracingEnabled, withConsumerSpan } from "./index";

const callerTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("tracing without an OTLP endpoint", () => {
  it("when no endpoint is set, then no tracer provider is registered and the API hands out non-recording spans", async () => {
    const tracing = await startTracing({ serviceName: "test", env: { OTEL_SERVICE_NAME: "ignored", OTEL_BSP_SCHEDULE_DELAY: "100" } });
    expect(tracing.enabled).toBe(false);
    expect(tracingEnabled()).toBe(false);
    const span = trace.getTracer("any").startSpan("anything");
    expect(span.isRecording()).toBe(false);
    expect(trace.isSpanContextValid(span.spanContext())).toBe(false);
    span.end();
    await tracing.shutdown();
    // Nor is the SDK (its exporter, processor, resources) loaded at all.
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    expect(loaded.filter((path) => /@opentelemetry[/+](sdk-trace|exporter-trace|resources|context-async-hooks)/.test(path))).toEqual([]);
  });

  it("when no endpoint is set, then a caller's traceparent is neither read nor passed on", async () => {
    await startTracing({ serviceName: "test", env: {} });
    const ctx = extractTraceContext({ traceparent: callerTraceparent });
    expect(trace.getSpan(ctx)).toBeUndefined();
    // No propagator is registered either: injecting even a valid span context writes nothing.
    const remote = trace.setSpanContext(context.active(), { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 });
    const carrier: Record<string, string> = {};
    propagation.inject(remote, carrier);
    expect(carrier).toEqual({});
    expect(traceHeaders(remote)).toEqual({});
  });

  it("when tracing is off, then a consumer's handler runs as it is and the bus is not wrapped", async () => {
    const bus = { durable: true, enqueue: async () => {} };
    expect(busWithTraceContext(bus)).toBe(bus);
    const result = await withConsumerSpan(
      { bus, subject: "jobs.events", group: "jobs", meta: { headers: { traceparent: callerTraceparent }, deliveryCount: 1 } },
      async () => {
        expect(trace.getSpan(context.active())).toBeUndefined();
        return 42;
      },
    );
    expect(result).toBe(42);
  });

  it("when OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none is set, then an endpoint does not turn tracing on", async () => {
    expect((await startTracing({ serviceName: "t", env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1", OTEL_SDK_DISABLED: "true" } })).enabled).toBe(
      false,
    );
    expect((await startTracing({ serviceName: "t", env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1", OTEL_TRACES_EXPORTER: "none" } })).enabled).toBe(
      false,
    );
    expect(tracingEnabled()).toBe(false);
  });
});
