import type { ProviderKind } from "@gw/config";
import { anthropicMessages } from "./anthropic/messages";
import { openaiChat } from "./openai/chat";
import type { ProviderAdapter } from "./types";

/**
 * The one table of provider adapters, by `kind`. Route handlers look adapters up here and never
 * branch on the provider themselves.
 */
export const providerAdapters: Partial<Record<ProviderKind, ProviderAdapter>> = {
  openai: { chat: openaiChat },
  anthropic: { messages: anthropicMessages },
};
