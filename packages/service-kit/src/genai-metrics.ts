import type { TokenUsage } from "@gw/contracts";
import { Counter, Gauge, type Registry } from "prom-client";
import { type HistogramSeries, SeriesHistogram } from "./series-histogram";
import type { ServiceMetrics } from "./metrics";

/*
 * OpenTelemetry's GenAI semantic conventions, exported as Prometheus metrics.
 *
 * Source: the GenAI metrics page of the OpenTelemetry semantic conventions
 * (github.com/open-telemetry/semantic-conventions, docs/gen-ai/gen-ai-metrics.md as of commit 7b0c0fe,
 * April 2026, the last before the page moved to open-telemetry/semantic-conventions-genai; status Development),
 * and the Prometheus name translation of the OpenTelemetry specification's "Prometheus and
 * OpenMetrics Compatibility" (as the Collector's translator applies it): dots become underscores,
 * a UCUM unit is appended in Prometheus' base unit (`s` → `_seconds`), a unit in braces (`{token}`)
 * is an annotation and is dropped, counters get `_total`.
 *
 * | OTel name                           | unit    | Prometheus name                               | buckets the spec recommends |
 * |-------------------------------------|---------|-----------------------------------------------|-----------------------------|
 * | `gen_ai.client.token.usage`         | {token} | `gen_ai_client_token_usage`                   | 1, 4, 16, …, 67108864 (×4)  |
 * | `gen_ai.server.request.duration`    | s       | `gen_ai_server_request_duration_seconds`      | 0.01, 0.02, …, 81.92 (×2)   |
 * | `gen_ai.server.time_to_first_token` | s       | `gen_ai_server_time_to_first_token_seconds`   | 0.001, 0.005, …, 10         |
 *
 * Attributes → labels: `gen_ai.operation.name` → `gen_ai_operation_name` (well-known values: chat,
 * text_completion, embeddings, generate_content, retrieval, execute_tool, create_agent,
 * invoke_agent, invoke_workflow; others MAY be used for other operations, e.g. rerank),
 * `gen_ai.provider.name` → `gen_ai_provider_name` (well-known: openai, anthropic, cohere,
 * mistral_ai, aws.bedrock, azure.ai.openai, gcp.gemini, …), `gen_ai.request.model` →
 * `gen_ai_request_model`, `gen_ai.token.type` → `gen_ai_token_type` (well-known: input, output),
 * `error.type` → `error_type` (on the duration only, and only on failures, as the spec has it).
 *
 * The gateway is the model server its callers see, so it reports the spec's server-side duration
 * and time to first token (their client-side twins, `gen_ai.client.operation.duration` and
 * `…time_to_first_chunk`, would time the same calls again).
 *
 * Two deliberate choices. The provider label is the configuration's provider name, not the spec's
 * well-known value of its kind: two providers of one kind (`openai` and a local vLLM) must stay
 * apart, and with the usual names (`openai`, `anthropic`, `cohere`) the two coincide. Metrics that
 * the spec does not define (cost, retries, fallbacks, circuit breakers) carry the gateway's own
 * `gw_` prefix, so they can never collide with a later version of the conventions.
 */

/** Token counts in powers of four, as the spec recommends for `gen_ai.client.token.usage`. */
export const GEN_AI_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** Seconds, doubling from 10 ms, as the spec recommends for `gen_ai.server.request.duration`. */
export const GEN_AI_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** Seconds, as the spec recommends for `gen_ai.server.time_to_first_token`. */
export const GEN_AI_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];

/**
 * `gen_ai.token.type` per field of TokenUsage. `input` and `output` are the spec's; the other three
 * are custom values (which the spec allows), named after the spec's own usage attributes
 * (`gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`,
 * `gen_ai.usage.reasoning.output_tokens`) so a dashboard reads the same words on spans and metrics.
 * They are parts of `input` and `output`, not additions to them: sum only input and output for a total.
 */
export const genAiTokenTypes = [
  ["input_tokens", "input"],
  ["output_tokens", "output"],
  ["cached_input_tokens", "cache_read"],
  ["cache_write_tokens", "cache_creation"],
  ["reasoning_tokens", "reasoning"],
] as const satisfies readonly (readonly [keyof TokenUsage, string])[];

export type CircuitBreakerState = "closed" | "open" | "half_open";
const breakerStates: readonly CircuitBreakerState[] = ["closed", "open", "half_open"];

/** What every value past a label's cap is recorded as. */
export const OTHER_LABEL_VALUE = "other";

export interface GenAiCall {
  /** `gen_ai.operation.name`: chat, text_completion, embeddings, … */
  operation: string;
  /** The configuration's provider name that served (or failed) the call. */
  provider: string;
  /** The public model name from the configuration, never a caller's free text. */
  requestModel: string;
  /** A low-cardinality error class (the gateway's error code, say) when the call failed. */
  errorType?: string;
  durationS: number;
  /** Time to the first streamed token; recorded for successful calls only, as the spec defines it. */
  ttftS?: number;
  usage?: TokenUsage;
  costUsd?: number;
}

export interface GenAiMetrics {
  observeCall(call: GenAiCall): void;
  /** One more retry of a call on this deployment (`provider/upstream-model`). */
  retry(deployment: string): void;
  /** A call gave up on this deployment and went on to the next route. */
  fallback(deployment: string): void;
  /** The deployment's breaker is now in `state`: that series reads 1, the other two 0. */
  breakerState(deployment: string, state: CircuitBreakerState): void;
}

export interface GenAiMetricsOptions {
  /** Distinct values kept per label; later new values are recorded as "other". Default 500. */
  maxValuesPerLabel?: number;
  /** Longest label value kept; a longer one is recorded as "other". Default 200. */
  maxValueLength?: number;
}

/**
 * Keeps every label bounded whatever the caller passes: a label takes at most `maxValues` distinct
 * values, the rest become "other". The callers pass configuration names only; this makes sure a bug
 * that passes something else can cost a few series, never an unbounded number of them.
 */
class LabelGuard {
  private readonly seen = new Map<string, Set<string>>();

  constructor(
    private readonly maxValues: number,
    private readonly maxLength: number,
    private readonly overflow: Counter<"label">,
  ) {}

  value(label: string, raw: string): string {
    let values = this.seen.get(label);
    if (!values) {
      values = new Set();
      this.seen.set(label, values);
    }
    if (values.has(raw)) return raw;
    if (raw.length === 0 || raw.length > this.maxLength || values.size >= this.maxValues) {
      this.overflow.inc({ label });
      return OTHER_LABEL_VALUE;
    }
    values.add(raw);
    return raw;
  }
}

/** A measurement prom-client would refuse (negative, NaN, infinite) is dropped rather than thrown into a request. */
const measurable = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v) && v >= 0;

const created = new WeakMap<Registry, GenAiMetrics>();

type Labels = Record<"gen_ai_operation_name" | "gen_ai_provider_name" | "gen_ai_request_model", string>;
/** The series one (operation, provider, model, error) observes on. */
interface CallSeries {
  call: Labels;
  duration: HistogramSeries;
  ttft: HistogramSeries;
  /** One per genAiTokenTypes entry, in its order. */
  tokens: HistogramSeries[];
  /** Cost observed since the cost counter was last read, added to it then. */
  cost: number;
}
const MAX_LABEL_SETS = 10_000;

/**
 * The GenAI metrics of one service, on its registry. Calling it again for the same registry returns
 * the same object (prom-client refuses a name registered twice), with the first call's options.
 */
export function createGenAiMetrics(metrics: ServiceMetrics, options: GenAiMetricsOptions = {}): GenAiMetrics {
  const existing = created.get(metrics.registry);
  if (existing) return existing;
  const registers = [metrics.registry];
  const callLabels = ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model"] as const;
  // Histograms with series handles rather than prom-client's: a call observes up to seven values,
  // and prom-client's observe costs 0.6 µs each (series-histogram.ts).
  const tokens = new SeriesHistogram({
    name: "gen_ai_client_token_usage",
    help: "Number of input and output tokens used (OTel gen_ai.client.token.usage, unit {token})",
    labelNames: [...callLabels, "gen_ai_token_type"] as const,
    buckets: GEN_AI_TOKEN_BUCKETS,
    registers,
  });
  const duration = new SeriesHistogram({
    name: "gen_ai_server_request_duration_seconds",
    help: "GenAI request duration, to the last byte of the answer (OTel gen_ai.server.request.duration)",
    labelNames: [...callLabels, "error_type"] as const,
    buckets: GEN_AI_DURATION_BUCKETS,
    registers,
  });
  const ttft = new SeriesHistogram({
    name: "gen_ai_server_time_to_first_token_seconds",
    help: "Time to the first token of successful streamed answers (OTel gen_ai.server.time_to_first_token)",
    labelNames: callLabels,
    buckets: GEN_AI_TTFT_BUCKETS,
    registers,
  });
  // A call's cost is summed on its series and added to the counter when the counter is read:
  // prom-client's inc validates the labels and builds their key on every call.
  const settleCost = (series: CallSeries): void => {
    if (series.cost > 0) cost.inc(series.call, series.cost);
    series.cost = 0;
  };
  const cost: Counter<(typeof callLabels)[number]> = new Counter({
    name: "gw_gen_ai_cost_usd_total",
    help: "Estimated cost of GenAI calls in US dollars, from the configured prices",
    labelNames: callLabels,
    registers,
    collect() {
      for (const series of callSeries.values()) settleCost(series);
    },
  });
  const retries = new Counter({ name: "gw_upstream_retries_total", help: "Retries of upstream calls, by deployment", labelNames: ["deployment"], registers });
  const fallbacks = new Counter({
    name: "gw_upstream_fallbacks_total",
    help: "Calls that left a deployment for the next route, by the deployment left",
    labelNames: ["deployment"],
    registers,
  });
  // One series per state, 1 for the current one (OpenMetrics' StateSet, as resilience4j and others
  // export breakers): `== 1` alerts and `sum by (state)` work without knowing a numeric encoding.
  const breaker = new Gauge({
    name: "gw_circuit_breaker_state",
    help: "Circuit breaker state by deployment: 1 on the current state's series, 0 on the others",
    labelNames: ["deployment", "state"],
    registers,
  });
  const overflow = new Counter({
    name: "gw_metric_label_overflow_total",
    help: "Label values recorded as 'other' because the label reached its cap of distinct values (a bug to look for)",
    labelNames: ["label"],
    registers,
  });
  const guard = new LabelGuard(options.maxValuesPerLabel ?? 500, options.maxValueLength ?? 200, overflow);
  const deployment = (name: string) => guard.value("deployment", name);

  // The series of one (operation, provider, model, error), found once: every call otherwise paid for
  // the guard's lookups and the label sets' keys. The keys are config names, so there are few; the
  // cap only guards against a bug that passes something else.
  const callSeries = new Map<string, CallSeries>();
  const seriesOf = (call: GenAiCall): CallSeries => {
    const key = `${call.operation}\u0000${call.provider}\u0000${call.requestModel}\u0000${call.errorType ?? ""}`;
    let series = callSeries.get(key);
    if (!series) {
      const labels = {
        gen_ai_operation_name: guard.value("gen_ai_operation_name", call.operation),
        gen_ai_provider_name: guard.value("gen_ai_provider_name", call.provider),
        gen_ai_request_model: guard.value("gen_ai_request_model", call.requestModel),
      };
      series = {
        call: labels,
        duration: duration.series(call.errorType === undefined ? labels : { ...labels, error_type: guard.value("error_type", call.errorType) }),
        ttft: ttft.series(labels),
        tokens: genAiTokenTypes.map(([, type]) => tokens.series({ ...labels, gen_ai_token_type: type })),
        cost: 0,
      };
      if (callSeries.size >= MAX_LABEL_SETS) {
        for (const old of callSeries.values()) settleCost(old);
        callSeries.clear();
      }
      callSeries.set(key, series);
    }
    return series;
  };

  const genAi: GenAiMetrics = {
    observeCall(call) {
      const series = seriesOf(call);
      if (measurable(call.durationS)) series.duration.observe(call.durationS);
      if (call.errorType === undefined && measurable(call.ttftS)) series.ttft.observe(call.ttftS);
      if (call.usage) {
        for (let i = 0; i < genAiTokenTypes.length; i++) {
          const count = call.usage[(genAiTokenTypes[i] as (typeof genAiTokenTypes)[number])[0]];
          if (measurable(count)) (series.tokens[i] as HistogramSeries).observe(count);
        }
      }
      if (measurable(call.costUsd)) series.cost += call.costUsd;
    },
    retry(name) {
      retries.inc({ deployment: deployment(name) });
    },
    fallback(name) {
      fallbacks.inc({ deployment: deployment(name) });
    },
    breakerState(name, state) {
      const label = deployment(name);
      for (const s of breakerStates) breaker.set({ deployment: label, state: s }, s === state ? 1 : 0);
    },
  };
  created.set(metrics.registry, genAi);
  return genAi;
}
