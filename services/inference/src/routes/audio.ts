import express, { type IRouter } from "express";
import { SpeechRequest } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import { jsonBody, readTranscriptionForm } from "@gw/service-kit";
import { withFallback } from "../fallback";
import type { ChatRouteDeps } from "./chat";
import { writeRelayedStream } from "./relay-stream";
import { serveRoute } from "./route-handler";

/**
 * `POST /v1/audio/speech` (JSON in, audio bytes out) for `speech` models and
 * `POST /v1/audio/transcriptions` (multipart in) for `transcription` models.
 */
export function mountAudioRoutes(router: IRouter, deps: ChatRouteDeps): void {
  serveRoute(router, deps.handlers, "/v1/audio/speech", jsonBody(deps.bodyLimit), async (input, ctx) => {
    const parsed = SpeechRequest.safeParse(input.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(ctx.identity, request.model, "speech");
    const { signal, log, credentials, meter } = ctx;
    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials, meter }, ({ adapter, ctx: call, upstreamModel }) =>
      adapter.speech?.(call, { request, publicModel: request.model, upstreamModel, requestId: ctx.requestId, signal }),
    );
    if (!result.ok) return { kind: "error", error: result.error };
    // No usage header: speech is priced by characters or audio, not by tokens the upstream reports,
    // so ingress keeps its estimate of the input text against the token limit.
    return { kind: "bytes", contentType: result.contentType, body: result.body };
  });

  serveRoute(router, deps.handlers, "/v1/audio/transcriptions", express.raw({ limit: deps.bodyLimit, type: () => true }), async (input, ctx) => {
    const upload = await readTranscriptionForm(input.contentType, input.body);
    const publicModel = upload.form.model;
    const model = deps.catalog.resolve(ctx.identity, publicModel, "transcription");
    const { signal, log, credentials, meter } = ctx;
    // Ingress does not read multipart forms: the outcome names the model for the usage record.
    meter.showModel = true;
    const result = await withFallback(model, publicModel, { ...deps, log, signal, credentials, meter }, ({ adapter, ctx: call, upstreamModel }) =>
      adapter.transcriptions?.(call, { request: upload, publicModel, upstreamModel, requestId: ctx.requestId, signal }),
    );
    if (!result.ok) return { kind: "error", error: result.error };
    if (result.kind === "stream") return { kind: "live", send: (res) => writeRelayedStream(res, result.events) };
    if (result.kind === "text") return { kind: "text", contentType: result.contentType, text: result.text };
    // Token-priced models report tokens; whisper reports seconds of audio, which is not a token count.
    const usage = result.body.usage;
    return {
      kind: "json",
      body: result.body,
      totalTokens: usage?.type === "tokens" && typeof usage.total_tokens === "number" ? usage.total_tokens : undefined,
    };
  });
}
