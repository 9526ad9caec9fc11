export type { Context as TraceContext } from "@opentelemetry/api";
export { startTracing, type StartTracingOptions, type Tracing } from "./start";
export { TracingEnvSchema, tracingSettings, type TracingEnv, type TracingSettings } from "./settings";
export { tracingEnabled } from "./state";
export { extractTraceContext, traceHeaders, type HeaderCarrier } from "./propagation";
export { ATTR_GW_REQUEST_ID } from "./attributes";
export { startHttpServerSpan, type HttpServerSpan } from "./http-server";
export { busWithTraceContext, withConsumerSpan, type ConsumedMessage } from "./messaging";
export { genAiAttributes, startGenAiAttemptSpan, untilStreamEnds, type GenAiAttempt, type GenAiAttemptEnd, type GenAiAttemptSpan } from "./genai";
