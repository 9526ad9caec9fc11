import { describe, expect, it } from "vitest";
import { createGenAiMetrics, type GenAiMetricsOptions, OTHER_LABEL_VALUE } from "./genai-metrics";
import { createMetrics } from "./metrics";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The registry's exposition text as samples (comment lines skipped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function setup(options?: GenAiMetricsOptions) {
  const metrics = createMetrics("inference", { defaults: false });
  const genAi = createGenAiMetrics(metrics, options);
  const samples = async () => parse(await metrics.registry.metrics());
  /** Every sample of `name` whose labels include `labels`. */
  const find = async (name: string, labels: Record<string, string> = {}) =>
    (await samples()).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  /** The one sample of `name` with exactly these labels (plus the service's). */
  const value = async (name: string, labels: Record<string, string>) => {
    const exact = (await find(name, labels)).filter((s) => Object.keys(s.labels).length === Object.keys(labels).length + 1);
    expect(exact, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
    return exact[0]!.value;
  };
  return { metrics, genAi, samples, find, value };
}

const call = { gen_ai_operation_name: "chat", gen_ai_provider_name: "openai", gen_ai_request_model: "gpt-4o-mini" };

describe("createGenAiMetrics: observeCall", () => {
  it("when a call reports usage, then one token observation per present type lands in the spec's buckets", async () => {
    const { genAi, find, value } = setup();
    genAi.observeCall({
      operation: "chat",
      provider: "openai",
      requestModel: "gpt-4o-mini",
      durationS: 0.5,
      usage: { input_tokens: 100, output_tokens: 20, cached_input_tokens: 64, reasoning_tokens: 0 },
    });
    const name = "gen_ai_client_token_usage";
    const types = new Set((await find(`${name}_count`, call)).map((s) => s.labels.gen_ai_token_type));
    expect(types).toEqual(new Set(["input", "output", "cache_read", "reasoning"]));
    // 100 input tokens: above the 64 bound, within 256
    expect(await value(`${name}_bucket`, { ...call, gen_ai_token_type: "input", le: "64" })).toBe(0);
    expect(await value(`${name}_bucket`, { ...call, gen_ai_token_type: "input", le: "256" })).toBe(1);
    expect(await value(`${name}_sum`, { ...call, gen_ai_token_type: "input" })).toBe(100);
    // bucket bounds are inclusive: 64 cached tokens count in le="64"; 20 output in le="64" but not le="16"
    expect(await value(`${name}_bucket`, { ...call, gen_ai_token_type: "cache_read", le: "64" })).toBe(1);
    expect(await value(`${name}_bucket`, { ...call, gen_ai_token_type: "output", le: "16" })).toBe(0);
    expect(await value(`${name}_bucket`, { ...call, gen_ai_token_type: "output", le: "64" })).toBe(1);
    // a reported zero is an observation; an absent count is none
    expect(await value(`${name}_count`, { ...call, gen_ai_token_type: "reasoning" })).toBe(1);
    expect(await find(`${name}_count`, { gen_ai_token_type: "cache_creation" })).toEqual([]);
    const bounds = (await find(`${name}_bucket`, { ...call, gen_ai_token_type: "input" })).map((s) => s.labels.le);
    expect(bounds).toEqual(["1", "4", "16", "64", "256", "1024", "4096", "16384", "65536", "262144", "1048576", "4194304", "16777216", "67108864", "+Inf"]);
  });

  it("when calls succeed and fail, then the duration histogram carries error_type on failures only", async () => {
    const { genAi, find, value } = setup();
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 0.03 });
    genAi.observeCall({
      operation: "chat",
      provider: "openai",
      requestModel: "gpt-4o-mini",
      durationS: 3,
      errorType: "upstream_timeout",
      usage: { input_tokens: 8 },
    });
    const name = "gen_ai_server_request_duration_seconds";
    expect(await value(`${name}_count`, call)).toBe(1);
    expect(await value(`${name}_bucket`, { ...call, le: "0.02" })).toBe(0);
    expect(await value(`${name}_bucket`, { ...call, le: "0.04" })).toBe(1);
    expect(await value(`${name}_count`, { ...call, error_type: "upstream_timeout" })).toBe(1);
    expect(await value(`${name}_bucket`, { ...call, error_type: "upstream_timeout", le: "2.56" })).toBe(0);
    expect(await value(`${name}_bucket`, { ...call, error_type: "upstream_timeout", le: "5.12" })).toBe(1);
    expect((await find(`${name}_bucket`, call)).filter((s) => s.labels.error_type === undefined).at(-2)?.labels.le).toBe("81.92");
    // a failed call with usage still counts its tokens, without error_type (the spec's token labels)
    expect((await find("gen_ai_client_token_usage_count")).map((s) => [s.labels.error_type, s.value])).toEqual([[undefined, 1]]);
  });

  it("when ttft is given, then it is observed for a success and not for a failure", async () => {
    const { genAi, find, value } = setup();
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1, ttftS: 0.07 });
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1, ttftS: 0.2, errorType: "upstream_error" });
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1 });
    const name = "gen_ai_server_time_to_first_token_seconds";
    expect(await value(`${name}_count`, call)).toBe(1);
    expect(await value(`${name}_bucket`, { ...call, le: "0.06" })).toBe(0);
    expect(await value(`${name}_bucket`, { ...call, le: "0.08" })).toBe(1);
    expect((await find(`${name}_bucket`, call)).map((s) => s.labels.le)[0]).toBe("0.001");
  });

  it("when calls carry a cost, then the cost counter sums it per model", async () => {
    const { genAi, value, find } = setup();
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1, costUsd: 0.25 });
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1, costUsd: 0.5 });
    genAi.observeCall({ operation: "embeddings", provider: "openai", requestModel: "text-embedding-3-small", durationS: 1 });
    expect(await value("gw_gen_ai_cost_usd_total", call)).toBe(0.75);
    expect(await find("gw_gen_ai_cost_usd_total", { gen_ai_operation_name: "embeddings" })).toEqual([]);
  });

  it("when the counter is read between calls, then each cost is counted once", async () => {
    const { genAi, value } = setup();
    const chat = { operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1 };
    genAi.observeCall({ ...chat, costUsd: 0.25 });
    expect(await value("gw_gen_ai_cost_usd_total", call)).toBe(0.25);
    expect(await value("gw_gen_ai_cost_usd_total", call)).toBe(0.25);
    genAi.observeCall({ ...chat, costUsd: 0.5 });
    genAi.observeCall({ ...chat, costUsd: 0.125 });
    expect(await value("gw_gen_ai_cost_usd_total", call)).toBe(0.875);
  });

  it("when the series pass their cap and are forgotten, then the cost observed on them is still counted", async () => {
    const { genAi, value } = setup({ maxValuesPerLabel: 20_000 });
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1, costUsd: 0.5 });
    for (let i = 0; i < 10_000; i++) genAi.observeCall({ operation: "chat", provider: "openai", requestModel: `m${i}`, durationS: 1 });
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", durationS: 1, costUsd: 0.25 });
    expect(await value("gw_gen_ai_cost_usd_total", call)).toBe(0.75);
  });

  it("when a measurement is negative or not a number, then it is dropped and nothing throws", async () => {
    const { genAi, find } = setup();
    const bad = { operation: "chat", provider: "openai", requestModel: "gpt-4o-mini" };
    expect(() => genAi.observeCall({ ...bad, durationS: Number.NaN, ttftS: -1, costUsd: -2, usage: { input_tokens: -5 } })).not.toThrow();
    expect(() => genAi.observeCall({ ...bad, durationS: Number.POSITIVE_INFINITY })).not.toThrow();
    for (const name of ["gen_ai_server_request_duration_seconds_count", "gen_ai_server_time_to_first_token_seconds_count", "gen_ai_client_token_usage_count"]) {
      expect(await find(name), name).toEqual([]);
    }
    expect(await find("gw_gen_ai_cost_usd_total")).toEqual([]);
  });
});

describe("createGenAiMetrics: deployments", () => {
  it("when retries and fallbacks happen, then their counters count per deployment", async () => {
    const { genAi, value } = setup();
    genAi.retry("openai/gpt-4o-mini");
    genAi.retry("openai/gpt-4o-mini");
    genAi.fallback("openai/gpt-4o-mini");
    genAi.retry("anthropic/claude-sonnet-4-5");
    expect(await value("gw_upstream_retries_total", { deployment: "openai/gpt-4o-mini" })).toBe(2);
    expect(await value("gw_upstream_retries_total", { deployment: "anthropic/claude-sonnet-4-5" })).toBe(1);
    expect(await value("gw_upstream_fallbacks_total", { deployment: "openai/gpt-4o-mini" })).toBe(1);
  });

  it("when a breaker changes state, then exactly its current state's series reads 1", async () => {
    const { genAi, find } = setup();
    const states = async () =>
      Object.fromEntries((await find("gw_circuit_breaker_state", { deployment: "openai/gpt-4o" })).map((s) => [s.labels.state, s.value]));
    genAi.breakerState("openai/gpt-4o", "open");
    expect(await states()).toEqual({ closed: 0, open: 1, half_open: 0 });
    genAi.breakerState("openai/gpt-4o", "half_open");
    expect(await states()).toEqual({ closed: 0, open: 0, half_open: 1 });
    genAi.breakerState("openai/gpt-4o", "closed");
    expect(await states()).toEqual({ closed: 1, open: 0, half_open: 0 });
  });
});

describe("createGenAiMetrics: bounded labels", () => {
  it("when a label passes its cap of distinct values, then new values become 'other' and known ones stay", async () => {
    const { genAi, find, value } = setup({ maxValuesPerLabel: 2 });
    for (const model of ["m1", "m2", "m3", "m4", "m1"]) genAi.observeCall({ operation: "chat", provider: "openai", requestModel: model, durationS: 1 });
    const models = (await find("gen_ai_server_request_duration_seconds_count")).map((s) => [s.labels.gen_ai_request_model, s.value]);
    expect(Object.fromEntries(models)).toEqual({ m1: 2, m2: 1, [OTHER_LABEL_VALUE]: 2 });
    expect(await value("gw_metric_label_overflow_total", { label: "gen_ai_request_model" })).toBe(2);
    for (let i = 0; i < 10; i++) genAi.retry(`p/m${i}`);
    expect((await find("gw_upstream_retries_total")).map((s) => s.labels.deployment)).toEqual(["p/m0", "p/m1", OTHER_LABEL_VALUE]);
  });

  it("when a value is empty or too long, then it is recorded as 'other'", async () => {
    const { genAi, find } = setup({ maxValueLength: 10 });
    genAi.observeCall({ operation: "chat", provider: "openai", requestModel: "x".repeat(11), durationS: 1, errorType: "" });
    const [sample] = await find("gen_ai_server_request_duration_seconds_count");
    expect(sample?.labels).toMatchObject({ gen_ai_request_model: OTHER_LABEL_VALUE, error_type: OTHER_LABEL_VALUE });
  });

  it("when created twice on one registry, then the same metrics are returned instead of a duplicate-name error", () => {
    const { metrics, genAi } = setup();
    expect(createGenAiMetrics(metrics)).toBe(genAi);
  });
});
