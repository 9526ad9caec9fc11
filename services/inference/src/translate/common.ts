import type { ChatToolCall, MessagesUsage, Usage } from "@gw/contracts";

/**
 * Mapping rules shared by every direction of chat ⇄ messages translation: stop reasons and usage.
 * The full rule set is written down in README.md beside this file.
 */

/** Anthropic stop_reason → OpenAI finish_reason. */
export function finishReasonOf(stopReason: string | null | undefined): string | null {
  switch (stopReason) {
    case null:
    case undefined:
      return null;
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
      return "stop";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "stop";
  }
}

/** OpenAI finish_reason → Anthropic stop_reason. */
export function stopReasonOf(finishReason: string | null | undefined): string | null {
  switch (finishReason) {
    case null:
    case undefined:
      return null;
    case "length":
      return "max_tokens";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "content_filter":
      return "refusal";
    default:
      return "end_turn";
  }
}

/**
 * Anthropic usage → OpenAI usage, LiteLLM's internally consistent way: cached and cache-written
 * input counts as prompt tokens, and the cached part is also reported in prompt_tokens_details.
 */
export function chatUsageOf(u: MessagesUsage): Usage {
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const prompt = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.output_tokens,
    total_tokens: prompt + u.output_tokens,
    prompt_tokens_details: { cached_tokens: cacheRead },
  };
}

/** OpenAI usage → Anthropic usage: the cached part of the prompt is reported as a cache read. */
export function messagesUsageOf(u: Usage): MessagesUsage {
  const details = (u as { prompt_tokens_details?: { cached_tokens?: number | null } | null }).prompt_tokens_details;
  const cached = details?.cached_tokens ?? 0;
  return {
    input_tokens: Math.max(0, u.prompt_tokens - cached),
    output_tokens: u.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/** Chat content is a string; some compatible upstreams send text parts instead. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: unknown) => (isRecord(part) && part.type === "text" && typeof part.text === "string" ? part.text : "")).join("");
}

/** Function tool calls only: custom (free-text) tool calls cannot be requested through this path. */
export function toolCallsOf(calls: unknown): ChatToolCall[] {
  if (!Array.isArray(calls)) return [];
  return calls.filter(
    (c: unknown): c is ChatToolCall =>
      isRecord(c) &&
      c.type === "function" &&
      typeof c.id === "string" &&
      isRecord(c.function) &&
      typeof c.function.name === "string" &&
      typeof c.function.arguments === "string",
  );
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
