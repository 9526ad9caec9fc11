import { z } from "zod";

/** OpenAI error envelope: every route except /v1/messages. All four keys are always present. */
export const OpenAIErrorEnvelope = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});
export type OpenAIErrorEnvelope = z.infer<typeof OpenAIErrorEnvelope>;

/** Anthropic error envelope: /v1/messages. */
export const AnthropicErrorEnvelope = z.object({
  type: z.literal("error"),
  error: z.object({ type: z.string(), message: z.string() }),
  request_id: z.string().optional(),
});
export type AnthropicErrorEnvelope = z.infer<typeof AnthropicErrorEnvelope>;

export type ErrorFormat = "openai" | "anthropic";
