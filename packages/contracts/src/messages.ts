import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * Anthropic Messages payloads (`POST /v1/messages`). As with chat, the fields we interpret are
 * checked and everything else passes through, so parameters we do not know reach the upstream.
 */

export const MessagesContentBlock = z.looseObject({ type: z.string().min(1) });
export type MessagesContentBlock = z.infer<typeof MessagesContentBlock>;

export const MessagesMessage = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(MessagesContentBlock)]),
});
export type MessagesMessage = z.infer<typeof MessagesMessage>;

export const MessagesTool = z.looseObject({
  name: z.string().min(1).max(128),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
  type: z.string().optional(),
});
export type MessagesTool = z.infer<typeof MessagesTool>;

export const MessagesToolChoice = z.looseObject({
  type: z.enum(["auto", "any", "none", "tool"]),
  name: z.string().optional(),
  disable_parallel_tool_use: z.boolean().optional(),
});
export type MessagesToolChoice = z.infer<typeof MessagesToolChoice>;

export const MessagesRequest = z.looseObject({
  model: ModelName,
  max_tokens: z.number().int().positive(),
  messages: z.array(MessagesMessage).min(1),
  system: z.union([z.string(), z.array(MessagesContentBlock)]).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).optional(),
  tools: z.array(MessagesTool).optional(),
  tool_choice: MessagesToolChoice.optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

export const MessagesUsage = z.looseObject({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cache_creation_input_tokens: z.number().int().nullish(),
  cache_read_input_tokens: z.number().int().nullish(),
});
export type MessagesUsage = z.infer<typeof MessagesUsage>;

export const MessagesStopReason = z.enum(["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded"]);

export const MessagesResponse = z.looseObject({
  id: z.string(),
  type: z.literal("message"),
  role: z.literal("assistant"),
  model: z.string(),
  content: z.array(MessagesContentBlock),
  stop_reason: z.string().nullable(),
  stop_sequence: z.string().nullable().optional(),
  usage: MessagesUsage,
});
export type MessagesResponse = z.infer<typeof MessagesResponse>;

/** One SSE event of a Messages stream: `event: <type>` and a JSON body with the same `type`. */
export const MessagesStreamEvent = z.looseObject({ type: z.string().min(1) });
export type MessagesStreamEvent = z.infer<typeof MessagesStreamEvent>;
