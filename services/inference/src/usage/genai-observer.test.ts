import { GatewayConfig } from "@gw/config";
import { createPricer } from "@gw/pricing";
import { createGenAiMetrics, createMetrics } from "@gw/service-kit";
import type { Request, Response } from "express";
import { describe, expect, it } from "vitest";
import { CallMeter } from "./call-meter";
import { genAiObserver } from "./genai-observer";

const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const config = GatewayConfig.parse({
  providers: { oa: { kind: "openai", base_url: "https://api.openai.com/v1" } },
  models: {
    priced: {
      type: "chat",
      routes: [{ provider: "oa", model: "gpt-4o-mini" }],
      price: { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 },
    },
    unpriced: { type: "chat", routes: [{ provider: "oa", model: "no-such-upstream-model" }] },
  },
  plans: { plus: limits, pro: limits, enterprise: limits },
});

function endedCall(model: string, usage: { input_tokens: number; output_tokens: number; cached_input_tokens?: number }): CallMeter {
  const meter = new CallMeter();
  meter.requestModel = model;
  meter.attemptStart("oa", config.models[model]!.routes[0]!.model);
  meter.attemptEnd();
  meter.tokens(usage);
  return meter;
}

async function sample(metrics: ReturnType<typeof createMetrics>, name: string, model: string): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`gen_ai_request_model="${model}"`));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

describe("the GenAI observer", () => {
  it("when priced calls end, then the cost counter adds each call's price, and an unpriced call adds none", async () => {
    const metrics = createMetrics("inference", { defaults: false });
    const observer = genAiObserver(createGenAiMetrics(metrics), createPricer(config));
    // 800 uncached input tokens at 2.5 USD per million, 200 cached at 1.25, 500 output at 10: 0.00725 USD.
    observer.ended("/v1/chat/completions", endedCall("priced", { input_tokens: 1000, cached_input_tokens: 200, output_tokens: 500 }), 200, undefined, 12);
    // 1,000,000 input tokens at 2.5: 2.5 USD.
    observer.ended("/v1/chat/completions", endedCall("priced", { input_tokens: 1_000_000, output_tokens: 0 }), 200, undefined, 12);
    observer.ended("/v1/chat/completions", endedCall("unpriced", { input_tokens: 1000, output_tokens: 500 }), 200, undefined, 12);
    expect(await sample(metrics, "gw_gen_ai_cost_usd_total", "priced")).toBeUndefined();
    observer.flush();
    expect(await sample(metrics, "gw_gen_ai_cost_usd_total", "priced")).toBeCloseTo(2.50725, 12);
    expect(await sample(metrics, "gw_gen_ai_cost_usd_total", "unpriced")).toBeUndefined();
    expect(await sample(metrics, "gen_ai_server_request_duration_seconds_count", "unpriced")).toBe(1);
  });

  it("when an answer closes, then its call is observed under the route its meter was made for, not the path as the request spelled it", async () => {
    const metrics = createMetrics("inference", { defaults: false });
    const observer = genAiObserver(createGenAiMetrics(metrics), createPricer(config));
    const closed = (path: string, meter: CallMeter) =>
      observer.onClose({ path } as Request, { locals: { callMeter: meter }, writableFinished: true, statusCode: 200 } as unknown as Response, 12);
    // Express routes /V1/Chat/Completions/ to /v1/chat/completions; the metrics name the route.
    const routed = endedCall("priced", { input_tokens: 10, output_tokens: 5 });
    routed.route = "/v1/chat/completions";
    closed("/V1/Chat/Completions/", routed);
    // A meter made without its route falls back on the request's path: here one no operation is named for.
    closed("/V1/Chat/Completions/", endedCall("unpriced", { input_tokens: 10, output_tokens: 5 }));
    observer.flush();
    const text = await metrics.registry.metrics();
    const durations = text.split("\n").filter((l) => l.startsWith("gen_ai_server_request_duration_seconds_count{"));
    expect(durations).toEqual([expect.stringContaining('gen_ai_operation_name="chat"')]);
    expect(durations[0]).toContain('gen_ai_request_model="priced"');
  });
});
