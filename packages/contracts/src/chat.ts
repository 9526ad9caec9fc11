import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * OpenAI Chat Completions payloads. Requests are validated strictly where the shape matters to us
 * (model, messages, tools, limits) and loosely elsewhere: standard parameters we do not interpret
 * pass through to the upstream unchanged.
 */

const ContentPart = z.looseObject({ type: z.string().min(1) });
const MessageContent = z.union([z.string(), z.array(ContentPart)]);

export const ChatToolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});
export type ChatToolCall = z.infer<typeof ChatToolCall>;

export const ChatMessage = z
  .looseObject({
    role: z.string().min(1),
    content: MessageContent.nullable().optional(),
    name: z.string().optional(),
    tool_calls: z.array(ChatToolCall).optional(),
    tool_call_id: z.string().optional(),
  })
  .superRefine((m, ctx) => {
    const hasCalls = (m.tool_calls?.length ?? 0) > 0 || m.function_call !== undefined;
    if ((m.content === undefined || m.content === null) && !(m.role === "assistant" && hasCalls)) {
      ctx.addIssue({ code: "custom", path: ["content"], message: "content is required" });
    }
    if (m.role === "tool" && !m.tool_call_id) {
      ctx.addIssue({ code: "custom", path: ["tool_call_id"], message: "tool messages require tool_call_id" });
    }
  });
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatTool = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "tool names are 1-64 letters, digits, _ or -"),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});
export type ChatTool = z.infer<typeof ChatTool>;

export const ChatToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string().min(1) }) }),
]);

const penalty = z.number().min(-2).max(2).nullish();

export const ChatCompletionRequest = z.looseObject({
  model: ModelName,
  messages: z.array(ChatMessage).min(1),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  tools: z.array(ChatTool).max(128).nullish(),
  tool_choice: ChatToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  presence_penalty: penalty,
  frequency_penalty: penalty,
  seed: z.number().int().nullish(),
  user: z.string().nullish(),
  response_format: z.looseObject({ type: z.string() }).nullish(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

export const Usage = z.looseObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type Usage = z.infer<typeof Usage>;

export const ChatCompletion = z.looseObject({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.number().int(),
      message: z.looseObject({ role: z.string(), content: z.string().nullable() }),
      finish_reason: z.string().nullable(),
    }),
  ),
  usage: Usage.nullish(),
});
export type ChatCompletion = z.infer<typeof ChatCompletion>;

export const ChatCompletionChunk = z.looseObject({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(z.looseObject({ index: z.number().int(), delta: z.looseObject({}), finish_reason: z.string().nullish() })),
  usage: Usage.nullish(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

export const ModelEntry = z.object({
  id: z.string(),
  object: z.literal("model"),
  created: z.number().int(),
  owned_by: z.string(),
});
export type ModelEntry = z.infer<typeof ModelEntry>;
export const ModelList = z.object({ object: z.literal("list"), data: z.array(ModelEntry) });
export type ModelList = z.infer<typeof ModelList>;
