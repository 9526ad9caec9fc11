import type { z } from "zod";
import type { ModelType } from "@gw/config";
import {
  ChatCompletionRequest,
  CompletionRequest,
  EmbeddingsRequest,
  ImageGenerationRequest,
  MessagesRequest,
  OcrRequest,
  RerankRequest,
  ResponsesRequest,
  SpeechRequest,
  type WorkSubject,
} from "@gw/contracts";

/**
 * Each async model route: the regular route it wraps (`/v1/<route>`), the model type it serves and
 * how its body is read. The body is checked with the regular route's own schema, so an async call is
 * refused with the same 400 the regular call would get, before any job exists.
 */
export interface AsyncModelRoute {
  modelType: ModelType;
  /** Undefined for the multipart route, whose form is checked by `readTranscriptionForm`. */
  schema?: z.ZodType<{ model: string; stream?: unknown; stream_format?: unknown }>;
}

export const asyncModelRoutes: Record<string, AsyncModelRoute> = {
  "chat/completions": { modelType: "chat", schema: ChatCompletionRequest },
  messages: { modelType: "chat", schema: MessagesRequest },
  responses: { modelType: "chat", schema: ResponsesRequest },
  completions: { modelType: "completion", schema: CompletionRequest },
  embeddings: { modelType: "embedding", schema: EmbeddingsRequest },
  rerank: { modelType: "rerank", schema: RerankRequest },
  "images/generations": { modelType: "image", schema: ImageGenerationRequest },
  "audio/speech": { modelType: "speech", schema: SpeechRequest },
  "audio/transcriptions": { modelType: "transcription" },
  ocr: { modelType: "ocr", schema: OcrRequest },
};

/** The route name research jobs are stored under. */
export const researchRoute = "tools/webtool/research";

/** Which workers run a route's jobs. */
export function workSubjectFor(route: string): WorkSubject {
  return route === researchRoute ? "jobs.work.tools" : "jobs.work.inference";
}
