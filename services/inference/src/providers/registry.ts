import type { ProviderKind } from "@gw/config";
import { anthropicMessages } from "./anthropic/messages";
import { cohereEmbeddings } from "./cohere/embeddings";
import { cohereRerank } from "./cohere/rerank";
import { jinaRerank } from "./jina/rerank";
import { openaiSpeech, openaiTranscriptions } from "./openai/audio";
import { openaiChat } from "./openai/chat";
import { openaiCompletions } from "./openai/completions";
import { openaiEmbeddings } from "./openai/embeddings";
import { openaiImages } from "./openai/images";
import { mistralChat } from "./mistral/chat";
import { mistralOcr } from "./mistral/ocr";
import type { ProviderAdapter } from "./types";

/**
 * The one table of provider adapters, by `kind`. Route handlers look adapters up here and never
 * branch on the provider themselves.
 */
export const providerAdapters: Partial<Record<ProviderKind, ProviderAdapter>> = {
  openai: {
    chat: openaiChat,
    embeddings: openaiEmbeddings,
    completions: openaiCompletions,
    imageGenerations: openaiImages,
    speech: openaiSpeech,
    transcriptions: openaiTranscriptions,
  },
  anthropic: { messages: anthropicMessages },
  cohere: { embeddings: cohereEmbeddings, rerank: cohereRerank },
  jina: { rerank: jinaRerank },
  // Mistral's chat API is OpenAI-compatible (`POST {base_url}/chat/completions`, Bearer auth) but
  // refuses OpenAI-only fields, so its adapter reshapes the body.
  mistral: { ocr: mistralOcr, chat: mistralChat },
};
