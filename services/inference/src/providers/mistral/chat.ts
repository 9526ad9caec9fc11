import type { ChatCompletionRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import type { ChatResult, ProviderContext, UpstreamCall } from "../types";
import { postChat } from "../openai/chat";

/**
 * OpenAI request fields Mistral's chat API refuses with a 422 (`extra_forbidden`) although callers of
 * an OpenAI client send them. Each either has a Mistral name, is implied, or changes the answer and
 * is refused here with a 400 naming it.
 */
const renamed = { max_completion_tokens: "max_tokens", seed: "random_seed" } as const;
/** Mistral puts usage on the final chunk of every stream, so `stream_options` is not needed. */
const implied = ["stream_options", "store", "service_tier", "user", "metadata"] as const;
const refused = [
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "modalities",
  "audio",
  "reasoning_effort",
  "verbosity",
  "web_search_options",
  "functions",
  "function_call",
] as const;

/** Mistral's chat API is OpenAI-compatible but strict about unknown fields. */
export function mistralChatBody(request: ChatCompletionRequest, upstreamModel: string): Record<string, unknown> | GatewayError {
  const body: Record<string, unknown> = { ...request, model: upstreamModel };
  for (const field of refused) {
    if (body[field] == null || body[field] === false) {
      delete body[field];
      continue;
    }
    return new GatewayError("invalid_request", `${field} is not supported for this model.`, { param: field });
  }
  for (const field of implied) delete body[field];
  for (const [from, to] of Object.entries(renamed)) {
    if (body[from] == null) continue;
    if (body[to] == null) body[to] = body[from];
    delete body[from];
  }
  return body;
}

/**
 * Mistral streams put usage on the chunk that carries finish_reason; a caller who asked for
 * include_usage reads it there (OpenAI clients take `usage` from whichever chunk has it).
 */
export async function mistralChat(ctx: ProviderContext, call: UpstreamCall<ChatCompletionRequest>): Promise<ChatResult> {
  const body = mistralChatBody(call.request, call.upstreamModel);
  if (body instanceof GatewayError) return { ok: false, error: body };
  return postChat(ctx, call, body);
}
