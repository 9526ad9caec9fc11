import type { Request, Response } from "express";
import type { Pricer } from "@gw/pricing";
import type { GenAiMetrics } from "@gw/service-kit";
import { type CallMeter, meterFor } from "./call-meter";

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

/** A finished call waiting to be observed. */
interface EndedCall {
  operation: string;
  path: string;
  meter: CallMeter;
  status: number;
  errorType: string | undefined;
  durationMs: number;
}

/** How long an ended call waits to be observed with others; a scrape sees it at most this late. */
const OBSERVE_EVERY_MS = 100;
/** Calls held at most; past it they are observed at once. */
const MAX_WAITING = 1_000;

/**
 * Observes each model call once it has ended, for the app's close listener (ServiceAppOptions.onClose):
 * the GenAI histograms (tokens by type, duration, time to first token) and the cost counter,
 * labelled from the configuration only (the deployment that answered and the public model, both
 * names the config defines). A call that never reached a provider is not observed. Calls are
 * observed a batch at a time, off the request's turn: pricing and five histogram updates cost a
 * fraction in a loop of what they cost cold after each request.
 */
export interface GenAiObserver {
  onClose(req: Request, res: Response, durationMs: number): void;
  /** A call that ended without an HTTP exchange of its own (an async job's). */
  ended(path: string, meter: CallMeter, status: number, errorType: string | undefined, durationMs: number): void;
  flush(): void;
}

export function genAiObserver(genAi: GenAiMetrics, pricer?: Pricer): GenAiObserver {
  let waiting: EndedCall[] = [];
  let timer: NodeJS.Timeout | undefined;

  const ended = (path: string, meter: CallMeter | undefined, status: number, errorType: string | undefined, durationMs: number): void => {
    const operation = operations[path];
    if (operation === undefined || !meter?.requestModel) return;
    waiting.push({ operation, path, meter, status, errorType, durationMs });
    if (waiting.length >= MAX_WAITING) flush();
    else if (!timer) {
      timer = setTimeout(flush, OBSERVE_EVERY_MS);
      timer.unref();
    }
  };

  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    const calls = waiting;
    waiting = [];
    for (const call of calls) observe(genAi, pricer, call);
  };

  return {
    onClose(req, res, durationMs) {
      const meter = meterFor(res);
      if (!meter) return;
      const status = res.writableFinished ? res.statusCode : 499;
      // The route as mounted: Express matches a path in any case and with a trailing slash, and
      // reading the request's path costs a parse of its URL after every answer.
      ended(meter.route ?? req.path, meter, status, status >= 400 ? (res.locals.errorType ?? String(status)) : undefined, durationMs);
    },
    ended,
    flush,
  };
}

function observe(genAi: GenAiMetrics, pricer: Pricer | undefined, call: EndedCall): void {
  // Read from the meter's fields: its outcome() object and rounding are for the ledger.
  const { meter } = call;
  const provider = meter.calledProvider;
  const model = meter.requestModel;
  if (!provider || !model) return;
  const usage = meter.reportedUsage;
  const ttftMs = meter.firstEventMs;
  // A metric's sum, not money kept (the ledger holds the exact amounts): the float pricing budgets
  // use, without the exact path's BigInt arithmetic and decimal strings.
  const nanoUsd = pricer?.nano?.(
    { model, provider, upstream_model: meter.calledUpstreamModel, route: call.path, usage, units: meter.reportedUnits },
    "nearest",
  );
  genAi.observeCall({
    operation: call.operation,
    provider,
    requestModel: model,
    errorType: call.errorType,
    durationS: call.durationMs / 1000,
    ttftS: ttftMs === undefined ? undefined : ttftMs / 1000,
    usage,
    costUsd: nanoUsd ? nanoUsd / 1e9 : undefined,
  });
}
