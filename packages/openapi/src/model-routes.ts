import type { speechFormats } from "@gw/contracts";
import { ref, type JsonSchema } from "./json-schema";

/** A media type's entry of a response or a request body. */
export type Content = Record<string, JsonSchema>;

export const json = (name: string): Content => ({ "application/json": { schema: ref(name) } });

/** A Server-Sent Events answer whose `data:` lines each hold one `event` component. */
export const sse = (event: string, ending: string): Content => ({
  "text/event-stream": {
    schema: {
      type: "string",
      description: `Server-Sent Events, when the request asks to stream: each \`data:\` line holds one \`${event}\` (JSON). ${ending}`,
    },
  },
});

const speechTypes: Record<(typeof speechFormats)[number], string> = {
  mp3: "audio/mpeg",
  opus: "audio/opus",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm",
};

/**
 * A model route, served at `/v1/<route>` and, as a job, at `/v1/async/<route>`: the same body (less
 * streaming) and, once the job is done, the same answer as its `result`.
 */
export interface ModelRoute {
  route: string;
  tag: string;
  summary: string;
  description: string;
  /** The request body's component. */
  request: string;
  multipart?: true;
  /** A request that works as written against a gateway with this model configured. */
  example: Record<string, unknown>;
  /** /v1/messages answers in Anthropic's error envelope. */
  anthropic?: true;
  /** The 200's content, by media type. */
  answer: Content;
  /** What a finished job's `result` holds. */
  result: JsonSchema;
}

export const modelRoutes: ModelRoute[] = [
  {
    route: "chat/completions",
    tag: "Chat",
    summary: "Create a chat completion",
    description: "OpenAI's Chat Completions, for every chat model whatever its provider: requests, answers, tool calls and streams are translated.",
    request: "ChatCompletionRequest",
    example: { model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] },
    answer: { ...json("ChatCompletion"), ...sse("ChatCompletionChunk", "The stream ends with `data: [DONE]`.") },
    result: ref("ChatCompletion"),
  },
  {
    route: "messages",
    tag: "Messages",
    summary: "Create a message",
    description:
      "Anthropic's Messages API, for every chat model whatever its provider. Errors come in Anthropic's envelope; the key may also be sent as `x-api-key`.",
    request: "MessagesRequest",
    anthropic: true,
    example: { model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: "Say hello" }] },
    answer: { ...json("MessagesResponse"), ...sse("MessagesStreamEvent", "Each event also names its type in `event:`.") },
    result: ref("MessagesResponse"),
  },
  {
    route: "responses",
    tag: "Responses",
    summary: "Create a response",
    description: "OpenAI's Responses API, served statelessly on top of chat completions for every chat model.",
    request: "ResponsesRequest",
    example: { model: "gpt-4o-mini", input: "Say hello" },
    answer: { ...json("ResponsesResponse"), ...sse("ResponsesStreamEvent", "Each event also names its type in `event:`.") },
    result: ref("ResponsesResponse"),
  },
  {
    route: "completions",
    tag: "Completions",
    summary: "Create a text completion",
    description: "OpenAI's legacy text completions, for `completion` models.",
    request: "CompletionRequest",
    example: { model: "gpt-3.5-turbo-instruct", prompt: "Say hello", max_tokens: 16 },
    answer: { ...json("Completion"), ...sse("Completion", "The stream ends with `data: [DONE]`.") },
    result: ref("Completion"),
  },
  {
    route: "embeddings",
    tag: "Embeddings",
    summary: "Create embeddings",
    description: "OpenAI's Embeddings, for `embedding` models of any provider.",
    request: "EmbeddingsRequest",
    example: { model: "text-embedding-3-small", input: ["The food was delicious"] },
    answer: json("EmbeddingsResponse"),
    result: ref("EmbeddingsResponse"),
  },
  {
    route: "rerank",
    tag: "Rerank",
    summary: "Rerank documents",
    description: "Cohere's v2 rerank format, for `rerank` models of any provider.",
    request: "RerankRequest",
    example: { model: "rerank-v3.5", query: "capital of France", documents: ["Berlin is in Germany", "Paris is the capital of France"], top_n: 1 },
    answer: json("RerankResponse"),
    result: ref("RerankResponse"),
  },
  {
    route: "images/generations",
    tag: "Images",
    summary: "Generate images",
    description: "OpenAI's image generation, for `image` models.",
    request: "ImageGenerationRequest",
    example: { model: "gpt-image-1", prompt: "A lighthouse at dawn", n: 1 },
    answer: {
      ...json("ImagesResponse"),
      "text/event-stream": {
        schema: { type: "string", description: "Server-Sent Events when `stream` is true: partial images, then the whole one, as the provider sends them." },
      },
    },
    result: ref("ImagesResponse"),
  },
  {
    route: "audio/speech",
    tag: "Audio",
    summary: "Create speech",
    description: "OpenAI's text to speech: the audio in the format asked for (`response_format`, mp3 by default).",
    request: "SpeechRequest",
    example: { model: "tts-1", input: "Hello", voice: "alloy", response_format: "mp3" },
    answer: {
      ...Object.fromEntries(Object.values(speechTypes).map((type) => [type, { schema: { type: "string", format: "binary" } }])),
      "text/event-stream": { schema: { type: "string", description: 'Server-Sent Events of audio chunks, when `stream_format` is "sse".' } },
    },
    result: ref("BinaryJobResult"),
  },
  {
    route: "audio/transcriptions",
    tag: "Audio",
    summary: "Transcribe audio",
    description: "OpenAI's transcription: JSON, or text, SRT or WebVTT as `response_format` asks.",
    request: "TranscriptionForm",
    multipart: true,
    example: { model: "whisper-1", response_format: "json" },
    answer: {
      ...json("TranscriptionJson"),
      "text/plain": { schema: { type: "string", description: "The transcript as text, SRT or WebVTT." } },
      "text/event-stream": { schema: { type: "string", description: 'Server-Sent Events of transcript deltas, when `stream` is "true".' } },
    },
    result: { anyOf: [ref("TranscriptionJson"), { type: "string", description: "A text, SRT or WebVTT transcript." }] },
  },
  {
    route: "ocr",
    tag: "OCR",
    summary: "Read a document (OCR)",
    description: "Mistral's OCR format, for `ocr` models: pages as Markdown, with images and annotations when asked for.",
    request: "OcrRequest",
    example: { model: "mistral-ocr-latest", document: { type: "document_url", document_url: "https://example.com/paper.pdf" } },
    answer: json("OcrResponse"),
    result: ref("OcrResponse"),
  },
];
