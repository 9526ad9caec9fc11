import { context, SpanKind, SpanStatusCode, trace, type Context } from "@opentelemetry/api";
import { ATTR_ERROR_TYPE, ATTR_GW_REQUEST_ID } from "./attributes";
import { extractTraceContext, traceHeaders } from "./propagation";
import { tracer, tracingEnabled } from "./state";

export interface ConsumedMessage {
  /** The bus the message came from: its `durable` flag tells JetStream from the in-process bus. */
  bus: { readonly durable: boolean };
  /** The logical subject (`jobs.work.inference`). */
  subject: string;
  /** The consumer group (the durable's name). */
  group: string;
  meta: { headers: Record<string, string>; deliveryCount: number };
}

/**
 * Runs a message's handler in a CONSUMER span (`process jobs.work.inference`) that continues the
 * trace the message's headers carry, so the work a request queued shows under that request. With
 * tracing off it only calls the handler.
 */
export async function withConsumerSpan<T>(message: ConsumedMessage, handle: () => Promise<T>): Promise<T> {
  if (!tracingEnabled()) return handle();
  const parent = extractTraceContext(message.meta.headers);
  const span = tracer().startSpan(
    `process ${message.subject}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": message.bus.durable ? "nats" : "gw_in_process",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": message.subject,
        "messaging.consumer.group.name": message.group,
        "gw.delivery_count": message.meta.deliveryCount,
        // The request that queued the work, when the publisher said (the header is lower-case on both buses).
        ...(message.meta.headers["x-request-id"] ? { [ATTR_GW_REQUEST_ID]: message.meta.headers["x-request-id"] } : {}),
      },
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), handle);
  } catch (err) {
    span.setAttribute(ATTR_ERROR_TYPE, err instanceof Error ? err.name : "Error");
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

type Headers = Record<string, string>;

/**
 * The bus, publishing with the trace context of `ctx` (the active one by default) in every
 * message's headers, for code that publishes through helpers taking a bus. Headers the caller sets
 * itself win. With tracing off, or no span in the context, it is the bus itself.
 */
export function busWithTraceContext<B extends object>(bus: B, ctx: Context = context.active()): B {
  if (!tracingEnabled()) return bus;
  const headers = traceHeaders(ctx);
  if (!headers.traceparent) return bus;
  return new Proxy(bus, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property === "enqueue") {
        return (subject: unknown, message: unknown, opts?: { headers?: Headers }) =>
          value.call(target, subject, message, { ...opts, headers: { ...headers, ...opts?.headers } });
      }
      if (property === "publish") {
        return (subject: unknown, message: unknown, given?: Headers) => value.call(target, subject, message, { ...headers, ...given });
      }
      return value.bind(target);
    },
  });
}
