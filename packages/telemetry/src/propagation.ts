import { context, propagation, ROOT_CONTEXT, type Context } from "@opentelemetry/api";
import { tracingEnabled } from "./state";

/** Headers as Node's HTTP server or the bus give them: lower-case names. */
export type HeaderCarrier = Record<string, string | string[] | undefined>;

/** The trace context a request or message carries (`traceparent`, `tracestate`), else the root. */
export function extractTraceContext(headers: HeaderCarrier): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/**
 * `traceparent` (and `tracestate`) for a context, by default the active one, to put on an outgoing
 * request or message. Empty when tracing is off or the context holds no span.
 */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const headers: Record<string, string> = {};
  if (tracingEnabled()) propagation.inject(ctx, headers);
  return headers;
}
