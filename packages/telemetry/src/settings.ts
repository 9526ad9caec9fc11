import { z } from "zod";
import { optionalUrl, parseWith } from "@gw/config";

/**
 * The environment as main.ts hands it over (process.env), or a parsed environment that includes
 * `TracingEnvSchema`'s keys: only the OTEL_* variables are read.
 */
export type TracingEnv = Record<string, unknown>;

/** The OpenTelemetry specification treats an empty variable as unset. */
const unsetIfEmpty = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === "" ? undefined : v), schema);
const httpProtocol = unsetIfEmpty(z.enum(["http/json", "http/protobuf"], "must be http/json (http/protobuf is accepted and sent as JSON)").optional());
const positiveInt = unsetIfEmpty(z.coerce.number().int().positive().optional());

/** The OTEL_* variables the gateway reads itself; a launcher's own env schema may extend with its shape. */
export const TracingEnvSchema = z.object({
  OTEL_SDK_DISABLED: unsetIfEmpty(z.enum(["true", "false", "TRUE", "FALSE", "True", "False"]).optional()),
  OTEL_TRACES_EXPORTER: unsetIfEmpty(z.string().optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl(/^https?$/),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl(/^https?$/),
  OTEL_EXPORTER_OTLP_HEADERS: unsetIfEmpty(z.string().optional()),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: unsetIfEmpty(z.string().optional()),
  // The exporter speaks OTLP over HTTP with JSON bodies, which collectors take on their HTTP port
  // whichever of the two HTTP encodings they were told about; gRPC is another port and protocol.
  OTEL_EXPORTER_OTLP_PROTOCOL: httpProtocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: httpProtocol,
  OTEL_SERVICE_NAME: unsetIfEmpty(z.string().optional()),
  OTEL_BSP_SCHEDULE_DELAY: positiveInt,
  OTEL_BSP_EXPORT_TIMEOUT: positiveInt,
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInt,
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInt,
});

export interface TracingSettings {
  /** Where spans are POSTed: the traces endpoint as given, or the general one with `v1/traces`. */
  url: string;
  headers?: Record<string, string>;
  serviceName?: string;
  batch: { scheduledDelayMillis?: number; exportTimeoutMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number };
}

/**
 * What startTracing needs from the environment, or undefined when traces are off: no endpoint,
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. A malformed value is a configuration error
 * naming the variable, as with every other setting.
 */
export function tracingSettings(env: TracingEnv): TracingSettings | undefined {
  const e = parseWith(TracingEnvSchema, env, "environment");
  if (e.OTEL_SDK_DISABLED?.toLowerCase() === "true") return undefined;
  if (e.OTEL_TRACES_EXPORTER?.split(",").every((name) => name.trim() === "none")) return undefined;
  const url = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT && withTracesPath(e.OTEL_EXPORTER_OTLP_ENDPOINT));
  if (!url) return undefined;
  const headers = { ...keyValues(e.OTEL_EXPORTER_OTLP_HEADERS), ...keyValues(e.OTEL_EXPORTER_OTLP_TRACES_HEADERS) };
  const batch = withoutUndefined({
    scheduledDelayMillis: e.OTEL_BSP_SCHEDULE_DELAY,
    exportTimeoutMillis: e.OTEL_BSP_EXPORT_TIMEOUT,
    maxQueueSize: e.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
  });
  return {
    url,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(e.OTEL_SERVICE_NAME ? { serviceName: e.OTEL_SERVICE_NAME } : {}),
    batch,
  };
}

/** As the specification says for the general endpoint: the signal's path is appended to it. */
function withTracesPath(endpoint: string): string {
  return `${endpoint.endsWith("/") ? endpoint : `${endpoint}/`}v1/traces`;
}

/** `key1=value1,key2=value2`, values percent-encoded (the W3C baggage format the spec names). */
function keyValues(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const pair of raw.split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    if (key) out[key] = safeDecode(value);
  }
  return out;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function withoutUndefined<T extends Record<string, number | undefined>>(values: T): { [K in keyof T]?: number } {
  const out: { [K in keyof T]?: number } = {};
  for (const [key, value] of Object.entries(values)) if (value !== undefined) out[key as keyof T] = value;
  return out;
}
