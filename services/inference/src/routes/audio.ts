import { pipeline } from "node:stream/promises";
import express, { type IRouter } from "express";
import { SpeechRequest } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { clientGone, jsonBody, readTranscriptionForm, routeLabel, sendError } from "@gw/service-kit";
import { withFallback } from "../fallback";
import { meterOf, setOutcomeHeader } from "../usage/call-meter";
import type { ChatRouteDeps } from "./chat";
import { writeRelayedStream } from "./relay-stream";
import { sendJson } from "./json-answer";

/**
 * `POST /v1/audio/speech` (JSON in, audio bytes out) for `speech` models and
 * `POST /v1/audio/transcriptions` (multipart in) for `transcription` models.
 */
export function mountAudioRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post("/v1/audio/speech", routeLabel("/v1/audio/speech"), jsonBody(deps.bodyLimit), async (req, res) => {
    const parsed = SpeechRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, "speech");
    const signal = clientGone(res);
    const log: Logger = res.locals.log;

    const result = await withFallback(
      model,
      request.model,
      { ...deps, log, signal, credentials: res.locals.credentials, meter: meterOf(res) },
      ({ adapter, ctx, upstreamModel }) =>
        adapter.speech?.(ctx, { request, publicModel: request.model, upstreamModel, requestId: res.locals.requestId, signal }),
    );
    if (!result.ok) {
      if (signal.aborted) return;
      setOutcomeHeader(res);
      sendError(res, result.error, req.path);
      return;
    }
    // No usage header: speech is priced by characters or audio, not by tokens the upstream reports,
    // so ingress keeps its estimate of the input text against the token limit.
    res.status(200);
    res.setHeader("content-type", result.contentType);
    setOutcomeHeader(res);
    try {
      // Bytes go out as they arrive; backpressure and a client leaving are handled by the pipeline.
      await pipeline(result.body, res);
    } catch (err) {
      // The headers are out: all that is left is to cut the answer, which the pipeline did.
      if (!signal.aborted) log.warn({ err }, "speech stream from the upstream failed");
    }
  });

  router.post(
    "/v1/audio/transcriptions",
    routeLabel("/v1/audio/transcriptions"),
    express.raw({ limit: deps.bodyLimit, type: () => true }),
    async (req, res) => {
      const upload = await readTranscriptionForm(req.headers["content-type"], req.body);
      const publicModel = upload.form.model;
      const model = deps.catalog.resolve(res.locals.identity!, publicModel, "transcription");
      const signal = clientGone(res);
      const log: Logger = res.locals.log;

      const meter = meterOf(res);
      // Ingress does not read multipart forms: the outcome names the model for the usage record.
      meter.showModel = true;
      const result = await withFallback(
        model,
        publicModel,
        { ...deps, log, signal, credentials: res.locals.credentials, meter },
        ({ adapter, ctx, upstreamModel }) =>
          adapter.transcriptions?.(ctx, { request: upload, publicModel, upstreamModel, requestId: res.locals.requestId, signal }),
      );
      if (!result.ok) {
        if (signal.aborted) return;
        setOutcomeHeader(res);
        sendError(res, result.error, req.path);
        return;
      }
      if (result.kind === "stream") {
        await writeRelayedStream(res, result.events);
        return;
      }
      if (result.kind === "text") {
        res.status(200).setHeader("content-type", result.contentType);
        setOutcomeHeader(res);
        res.send(result.text);
        return;
      }
      // Token-priced models report tokens; whisper reports seconds of audio, which is not a token count.
      const usage = result.body.usage;
      sendJson(res, result.body, usage?.type === "tokens" && typeof usage.total_tokens === "number" ? usage.total_tokens : undefined);
    },
  );
}
