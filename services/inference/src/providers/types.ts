import type { CallMeter } from "../usage/call-meter";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Completion,
  CompletionRequest,
  ImageGenerationRequest,
  ImagesResponse,
  SpeechRequest,
  TranscriptionJson,
  EmbeddingsRequest,
  EmbeddingsResponse,
  MessagesRequest,
  MessagesResponse,
  MessagesStreamEvent as MessagesEvent,
  RerankRequest,
  RerankResponse,
  Usage,
} from "@gw/contracts";
import type { ProviderConfig } from "@gw/config";
import type { GatewayError } from "@gw/errors";
import type { CallSignal, TranscriptionUpload } from "@gw/service-kit";
export type { TranscriptionUpload, UploadedFile } from "@gw/service-kit";
import type { Dispatcher } from "undici";

/** What an adapter gets to reach its upstream. The credential always comes from the server. */
export interface ProviderContext {
  name: string;
  config: ProviderConfig;
  apiKey: string | undefined;
  agent: Dispatcher;
  /** The call's usage meter, read by the metered adapter (usage/metered-adapter.ts). */
  meter?: CallMeter;
}

export interface UpstreamCall<Req> {
  request: Req;
  publicModel: string;
  upstreamModel: string;
  requestId: string;
  signal: CallSignal;
  /** The caller's `anthropic-beta` header (comma-separated features); only Anthropic upstreams use it. */
  anthropicBeta?: string;
}

/** A mid-stream failure, sent to the client as an SSE error event in the route's format. */
export interface StreamFailure {
  message: string;
  type: string;
  code: string | null;
}

/**
 * `usage` is what the upstream reported for the whole call; the route records it (for the token
 * limit) and writes nothing, so whether the client sees usage stays the adapter's concern.
 */
export type ChatStreamEvent = { type: "chunk"; chunk: ChatCompletionChunk } | { type: "usage"; usage: Usage } | { type: "error"; error: StreamFailure };

/**
 * Expected failures are values (with `retryable`), so the fallback loop decides what happens next;
 * an adapter resolves as soon as the upstream's headers are in, before any byte reaches the client.
 */
export type ChatResult =
  | { ok: true; kind: "json"; completion: ChatCompletion }
  | { ok: true; kind: "stream"; events: AsyncIterable<ChatStreamEvent> }
  | { ok: false; error: GatewayError };

/**
 * A Messages stream, event by event (`event.type` is the SSE event name). Usage is read from the
 * `message_start` and `message_delta` events themselves; a mid-stream failure is an error event.
 */
export type MessagesStreamEvent = { type: "event"; event: MessagesEvent } | { type: "error"; error: StreamFailure };

export type MessagesResult =
  | { ok: true; kind: "json"; message: MessagesResponse }
  | { ok: true; kind: "stream"; events: AsyncIterable<MessagesStreamEvent> }
  | { ok: false; error: GatewayError };

/**
 * What a provider can do, one function per operation in its own format. A route asks for the
 * operation in the caller's format and, when the provider only speaks the other one, translates
 * (services/inference/src/translate).
 */
export interface ProviderAdapter {
  chat?(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult>;
  messages?(ctx: ProviderContext, call: UpstreamCall<MessagesRequest>): Promise<MessagesResult>;
  embeddings?(ctx: ProviderContext, call: UpstreamCall<EmbeddingsRequest>): Promise<EmbeddingsResult>;
  rerank?(ctx: ProviderContext, call: UpstreamCall<RerankRequest>): Promise<RerankResult>;
  completions?(ctx: ProviderContext, call: UpstreamCall<CompletionRequest>): Promise<CompletionResult>;
  imageGenerations?(ctx: ProviderContext, call: UpstreamCall<ImageGenerationRequest>): Promise<ImagesResult>;
  speech?(ctx: ProviderContext, call: UpstreamCall<SpeechRequest>): Promise<SpeechResult>;
  transcriptions?(ctx: ProviderContext, call: UpstreamCall<TranscriptionUpload>): Promise<TranscriptionResult>;
  ocr?(ctx: ProviderContext, call: UpstreamCall<import("@gw/contracts").OcrRequest>): Promise<OcrResult>;
}

/**
 * An OCR answer in the public (Mistral) shape under the public model name. OCR is billed by pages,
 * so it reports no tokens: the route tells ingress 0.
 */
export type OcrResult = { ok: true; response: import("@gw/contracts").OcrResponse } | { ok: false; error: GatewayError };

/**
 * An embeddings answer in the OpenAI shape under the public model name. Vectors may come as floats
 * or as base64 whatever the caller asked for: the route encodes them as asked.
 */
export type EmbeddingsResult = { ok: true; response: EmbeddingsResponse } | { ok: false; error: GatewayError };

/**
 * A rerank answer in the public (Cohere v2) shape, ordered and bounded by `top_n`. `usageTokens` is
 * set when the provider reports token use (a search-unit-billed provider reports 0).
 */
export type RerankResult = { ok: true; response: RerankResponse; usageTokens: number | undefined } | { ok: false; error: GatewayError };

/** Legacy completions stream like chat: `text_completion` chunks, usage as its own event. */
export type CompletionStreamEvent = { type: "chunk"; chunk: Completion } | { type: "usage"; usage: Usage } | { type: "error"; error: StreamFailure };

export type CompletionResult =
  | { ok: true; kind: "json"; completion: Completion }
  | { ok: true; kind: "stream"; events: AsyncIterable<CompletionStreamEvent> }
  | { ok: false; error: GatewayError };

/**
 * One SSE event of a stream the gateway relays unchanged (image and transcription streams), with
 * its `event:` name when it had one; `usage` is the total tokens an event reported, for the limit.
 */
export type RelayedStreamEvent =
  | { type: "event"; event: string | undefined; data: string }
  | { type: "usage"; totalTokens: number }
  | { type: "error"; error: StreamFailure };

export type ImagesResult =
  | { ok: true; kind: "json"; response: ImagesResponse }
  | { ok: true; kind: "stream"; events: AsyncIterable<RelayedStreamEvent> }
  | { ok: false; error: GatewayError };

/** Audio as it arrives (undici's body stream), to be piped to the caller with its content type. */
export type SpeechResult = { ok: true; contentType: string; body: AsyncIterable<Uint8Array> } | { ok: false; error: GatewayError };

/**
 * A parsed transcription form: the checked fields, and every entry in the caller's order (the file,
 * repeated `x[]` fields and unknown ones included) so the upstream gets the form the caller sent.
 */

/** JSON formats (`json`, `verbose_json`, `diarized_json`), text ones (`text`, `srt`, `vtt`) or a stream. */
export type TranscriptionResult =
  | { ok: true; kind: "json"; body: TranscriptionJson }
  | { ok: true; kind: "text"; contentType: string; text: string }
  | { ok: true; kind: "stream"; events: AsyncIterable<RelayedStreamEvent> }
  | { ok: false; error: GatewayError };
