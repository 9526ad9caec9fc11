import type { RequestHandler, Response } from "express";
import type { Pricer } from "@gw/pricing";
import type { GenAiMetrics } from "@gw/service-kit";
import { meteredCall } from "./call-meter";

/** `gen_ai.operation.name` per route: the spec's well-known values where it has one, our own otherwise. */
const operations: Record<string, string> = {
  "/v1/chat/completions": "chat",
  "/v1/messages": "chat",
  "/v1/responses": "chat",
  "/v1/completions": "text_completion",
  "/v1/embeddings": "embeddings",
  "/v1/images/generations": "generate_content",
  "/v1/rerank": "rerank",
  "/v1/audio/speech": "speech",
  "/v1/audio/transcriptions": "transcription",
  "/v1/ocr": "ocr",
};

/**
 * Observes each model call once it has ended: the GenAI histograms (tokens by type, duration, time
 * to first token) labelled from the configuration only (the deployment that answered and the public
 * model, both names the config defines). A call that never reached a provider is not observed.
 */
export function observeGenAi(genAi: GenAiMetrics | undefined, pricer?: Pricer): RequestHandler {
  return (req, res, next) => {
    if (genAi) {
      const started = performance.now();
      res.once("close", () => observe(genAi, pricer, req.path, res, started));
    }
    next();
  };
}

function observe(genAi: GenAiMetrics, pricer: Pricer | undefined, path: string, res: Response, started: number): void {
  const operation = operations[path];
  const call = meteredCall(res);
  if (!operation || !call?.outcome.provider || !call.meter.requestModel) return;
  const { outcome } = call;
  const provider = outcome.provider;
  if (!provider) return;
  const cost = pricer?.price({
    model: call.meter.requestModel,
    provider,
    upstream_model: outcome.upstream_model,
    route: path,
    usage: outcome.usage,
    units: outcome.units,
  }).cost_usd;
  const status = res.writableFinished ? res.statusCode : 499;
  genAi.observeCall({
    operation,
    provider,
    requestModel: call.meter.requestModel,
    ...(status >= 400 ? { errorType: res.locals.errorType ?? String(status) } : {}),
    durationS: (performance.now() - started) / 1000,
    ...(outcome.ttft_ms !== undefined ? { ttftS: outcome.ttft_ms / 1000 } : {}),
    ...(outcome.usage ? { usage: outcome.usage } : {}),
    // A metric's sum, not money kept: the ledger holds the exact amounts.
    ...(cost ? { costUsd: Number(cost) } : {}),
  });
}
