import { context, diag, DiagLogLevel, propagation, trace } from "@opentelemetry/api";
import { buildInfo } from "@gw/config";
import { tracingSettings, type TracingEnv, type TracingSettings } from "./settings";
import { setTracer } from "./state";

export interface StartTracingOptions {
  /** The resource's `service.name` unless OTEL_SERVICE_NAME says otherwise. */
  serviceName: string;
  /** The environment main.ts read (process.env), or a parsed one holding the OTEL_* keys. */
  env: TracingEnv;
  /** Where the SDK's own errors go (an exporter that cannot reach its collector, …). */
  logger?: { warn(obj: Record<string, unknown>, msg: string): void };
}

export interface Tracing {
  /** Whether spans are recorded and exported in this process. */
  readonly enabled: boolean;
  /** Exports what is still queued and unregisters the provider. Safe to call twice. */
  shutdown(): Promise<void>;
}

const off: Tracing = { enabled: false, shutdown: async () => {} };

/**
 * Registers a tracer provider exporting over OTLP/HTTP (JSON), in batches, when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Otherwise nothing is
 * registered, and the SDK is not even loaded: `@opentelemetry/api` stays its no-op and
 * `tracingEnabled()` false, so the request path makes no spans and moves no context. The SDK reads
 * the remaining standard variables (OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_TIMEOUT,
 * certificates, OTEL_RESOURCE_ATTRIBUTES) from process.env itself. A malformed OTEL_* value throws,
 * naming the variable.
 */
export async function startTracing(options: StartTracingOptions): Promise<Tracing> {
  const settings = tracingSettings(options.env);
  if (!settings) return off;
  if (options.logger) diag.setLogger(diagLogger(options.logger), DiagLogLevel.WARN);
  const provider = await createProvider(settings, options.serviceName);
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }] = await Promise.all([
    import("@opentelemetry/context-async-hooks").then(commonJs),
    import("@opentelemetry/core").then(commonJs),
  ]);
  // A second start in one process would leave the first provider's spans nowhere: refused.
  if (!trace.setGlobalTracerProvider(provider)) {
    await provider.shutdown();
    throw new Error("tracing: a tracer provider is already registered in this process");
  }
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  setTracer(provider.getTracer("@gw/telemetry", buildInfo().version));
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    shutdown() {
      stopped ??= (async () => {
        setTracer(undefined);
        try {
          await provider.shutdown();
        } finally {
          trace.disable();
          context.disable();
          propagation.disable();
          diag.disable();
        }
      })();
      return stopped;
    },
  };
}

/**
 * A module's exports however it was loaded. Node gives a CommonJS module's named exports and its
 * `module.exports` as `default`; in the services' bundles (scripts/build.ts), a CommonJS module
 * imported on demand becomes a chunk whose only export is `default`. The SDK's packages are CommonJS.
 */
function commonJs<T extends object>(namespace: T): T {
  return (namespace as { default?: T }).default ?? namespace;
}

/** The SDK's modules are loaded here only, so a process that does not trace never pays for them. */
async function createProvider(settings: TracingSettings, serviceName: string) {
  const [
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { defaultResource, detectResources, envDetector, resourceFromAttributes },
    semconv,
  ] = await Promise.all([
    import("@opentelemetry/sdk-trace-base").then(commonJs),
    import("@opentelemetry/exporter-trace-otlp-http").then(commonJs),
    import("@opentelemetry/resources").then(commonJs),
    import("@opentelemetry/semantic-conventions").then(commonJs),
  ]);
  const exporter = new OTLPTraceExporter({ url: settings.url, ...(settings.headers ? { headers: settings.headers } : {}) });
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(
      resourceFromAttributes({
        [semconv.ATTR_SERVICE_NAME]: settings.serviceName ?? serviceName,
        [semconv.ATTR_SERVICE_VERSION]: buildInfo().version,
      }),
    );
  return new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter, settings.batch)] });
}

function diagLogger(logger: NonNullable<StartTracingOptions["logger"]>) {
  const warn = (message: string, ...args: unknown[]) => logger.warn(args.length > 0 ? { detail: args.map(String).join(" ") } : {}, `tracing: ${message}`);
  const ignore = () => {};
  return { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
}
