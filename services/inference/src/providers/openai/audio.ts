import { TranscriptionJson, type SpeechRequest, type TranscriptionFormat } from "@gw/contracts";
import { FormData, Response } from "undici";
import type { ProviderContext, SpeechResult, TranscriptionResult, TranscriptionUpload, UpstreamCall } from "../types";
import { openaiHeaders } from "./chat";
import { contentTypeOf, isEventStream, postOpenAI, readJson, relayEvents } from "./passthrough";
import { failureContext } from "../../upstream/errors";

/** What the audio formats are sent as when an upstream names no content type of its own. */
const speechContentTypes: Record<string, string> = {
  mp3: "audio/mpeg",
  opus: "audio/opus",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm",
};

/**
 * Text to speech (`POST /audio/speech`): JSON in, audio bytes out. The body is handed on as it
 * arrives with the upstream's content type (`text/event-stream` for `stream_format: "sse"`).
 */
export async function openaiSpeech(ctx: ProviderContext, call: UpstreamCall<SpeechRequest>): Promise<SpeechResult> {
  const sse = call.request.stream_format === "sse";
  const headers = { ...openaiHeaders(ctx, sse), ...(sse ? {} : { accept: "application/octet-stream" }) };
  const sent = await postOpenAI(ctx, call, "/audio/speech", JSON.stringify({ ...call.request, model: call.upstreamModel }), headers);
  if (!sent.ok) return sent;
  const fallback = sse ? "text/event-stream" : (speechContentTypes[call.request.response_format ?? "mp3"] ?? "application/octet-stream");
  return { ok: true, contentType: contentTypeOf(sent.response) ?? fallback, body: sent.response.body };
}

const textFormats: ReadonlySet<TranscriptionFormat> = new Set(["text", "srt", "vtt"]);

/**
 * Speech to text (`POST /audio/transcriptions`): the caller's form is sent again as multipart, entry
 * by entry in its order, with only `model` replaced by the upstream name. The answer is JSON for the
 * JSON formats, text for `text`/`srt`/`vtt` (with the upstream's content type), or a relayed stream.
 */
export async function openaiTranscriptions(ctx: ProviderContext, call: UpstreamCall<TranscriptionUpload>): Promise<TranscriptionResult> {
  const { body, contentType } = await encodeForm(call.request, call.upstreamModel);
  const stream = call.request.form.stream === "true";
  const headers = { ...openaiHeaders(ctx, stream), "content-type": contentType };
  const sent = await postOpenAI(ctx, call, "/audio/transcriptions", body, headers);
  if (!sent.ok) return sent;
  if (isEventStream(sent.response)) return { ok: true, kind: "stream", events: relayEvents(sent.response.body, failureContext(ctx, call)) };
  if (textFormats.has(call.request.form.response_format ?? "json")) {
    const text = await sent.response.body.text();
    return { ok: true, kind: "text", contentType: contentTypeOf(sent.response) ?? "text/plain; charset=utf-8", text };
  }
  const read = await readJson(sent.response, (v) => TranscriptionJson.safeParse(v));
  if (!read.ok) return read;
  return { ok: true, kind: "json", body: read.value };
}

/**
 * The form as multipart bytes with its boundary. Encoded to a buffer (the file is in memory already,
 * bounded by the body limit) so a retry or a fallback route can send it again.
 */
export async function encodeForm(upload: TranscriptionUpload, upstreamModel: string): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of upload.entries) {
    if (name === "model") form.append(name, upstreamModel);
    else if (typeof value === "string") form.append(name, value);
    else form.append(name, value, value.name);
  }
  const encoded = new Response(form);
  const body = Buffer.from(await encoded.arrayBuffer());
  return { body, contentType: encoded.headers.get("content-type") ?? "multipart/form-data" };
}
