import type { Tracer } from "@opentelemetry/api";

/**
 * Whether this process records spans, and the tracer that makes them. The boolean is read on the
 * request path before anything else of tracing is touched, so a gateway started without an OTLP
 * endpoint pays for that read and no more.
 */
let current: Tracer | undefined;

export function tracingEnabled(): boolean {
  return current !== undefined;
}

/** The registered provider's tracer; only called once `tracingEnabled()` said yes. */
export function tracer(): Tracer {
  if (!current) throw new Error("tracing is not started");
  return current;
}

/** Set by startTracing, cleared by its shutdown. */
export function setTracer(value: Tracer | undefined): void {
  current = value;
}
