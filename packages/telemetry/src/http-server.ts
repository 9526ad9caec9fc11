import type { IncomingMessage } from "node:http";
import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from "@opentelemetry/api";
import { ATTR_ERROR_TYPE, ATTR_GW_REQUEST_ID, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from "./attributes";
import { extractTraceContext } from "./propagation";
import { tracer } from "./state";

export interface HttpServerSpan {
  /** The request's context: its span, under the caller's trace when the caller sent one. */
  readonly context: Context;
  /**
   * Runs the rest of the request in the span's context. The request's own events (its body
   * arriving) are bound to it too: body parsers call the next handler from those events, which
   * would otherwise run outside any request's context.
   */
  run(req: IncomingMessage, next: () => void): void;
  /** Names the span after its route (never the raw path) and ends it with the answer's status. */
  end(status: number, route: string | undefined): void;
}

/**
 * A SERVER span for one request, continuing the `traceparent` it came with. Only called when
 * tracing is enabled; with it off the request path never reaches this module.
 */
export function startHttpServerSpan(req: IncomingMessage, requestId: string): HttpServerSpan {
  const method = req.method ?? "GET";
  const parent = extractTraceContext(req.headers);
  const span = tracer().startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_GW_REQUEST_ID]: requestId } },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  return {
    context: ctx,
    run(request, next) {
      context.bind(ctx, request);
      context.with(ctx, next);
    },
    end(status, route) {
      finish(span, method, status, route);
    },
  };
}

function finish(span: Span, method: string, status: number, route: string | undefined): void {
  if (route) {
    span.updateName(`${method} ${route}`);
    span.setAttribute(ATTR_HTTP_ROUTE, route);
  }
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  // Per the HTTP conventions a server span fails on a 5xx only; a 4xx is the caller's error.
  if (status >= 500) {
    span.setAttribute(ATTR_ERROR_TYPE, String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
