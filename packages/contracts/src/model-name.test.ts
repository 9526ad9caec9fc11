import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { SpeechRequest, TranscriptionForm } from "./audio";
import { ChatCompletionRequest } from "./chat";
import { CompletionRequest } from "./completions";
import { EmbeddingsRequest } from "./embeddings";
import { ImageGenerationRequest } from "./images";
import { MessagesRequest } from "./messages";
import { MODEL_NAME_MAX_LENGTH } from "./model-name";
import { OcrRequest } from "./ocr";
import { RerankRequest } from "./rerank";
import { ResponsesRequest } from "./responses";

/** Every request body with a `model`, each with an otherwise valid example. */
const requests: Record<string, [z.ZodType, Record<string, unknown>]> = {
  chat: [ChatCompletionRequest, { messages: [{ role: "user", content: "hi" }] }],
  messages: [MessagesRequest, { max_tokens: 10, messages: [{ role: "user", content: "hi" }] }],
  responses: [ResponsesRequest, { input: "hi" }],
  completions: [CompletionRequest, { prompt: "hi" }],
  embeddings: [EmbeddingsRequest, { input: "hi" }],
  rerank: [RerankRequest, { query: "q", documents: ["d"] }],
  images: [ImageGenerationRequest, { prompt: "a cat" }],
  speech: [SpeechRequest, { input: "hi", voice: "alloy" }],
  transcription: [TranscriptionForm, { file: new Blob(["RIFF"]) }],
  ocr: [OcrRequest, { document: { type: "document_url", document_url: "https://example.com/a.pdf" } }],
};

describe("ModelName in every request body", () => {
  for (const [route, [schema, body]] of Object.entries(requests)) {
    it(`when a ${route} request names a model of ${MODEL_NAME_MAX_LENGTH + 1} characters, then it is refused naming model; ${MODEL_NAME_MAX_LENGTH} is accepted`, () => {
      expect(schema.safeParse({ ...body, model: "m".repeat(MODEL_NAME_MAX_LENGTH) }).success).toBe(true);
      const refused = schema.safeParse({ ...body, model: "m".repeat(100_000) });
      expect(refused.success).toBe(false);
      expect(refused.error?.issues.map((issue) => issue.path)).toEqual([["model"]]);
      expect(refused.error?.issues[0]?.message).toBe(`must be at most ${MODEL_NAME_MAX_LENGTH} characters`);
    });
  }
});
