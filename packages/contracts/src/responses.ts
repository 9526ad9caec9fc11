import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * OpenAI Responses API payloads (`POST /v1/responses`, schemas `CreateResponse`, `Response` and
 * `ResponseStreamEvent` of openai-openapi.json). The gateway serves it statelessly on top of chat
 * completions, so the request is checked where the translation reads it; parameters it cannot
 * honour are refused by the translation (services/inference/src/translate/responses-api.ts), with
 * the rules in the README beside it.
 */

const toolName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "tool names are 1-64 letters, digits, _ or -");

/** A content part of an input message: `input_text`, `input_image`, `input_file`, or replayed `output_text` / `refusal`. */
export const ResponsesInputPart = z.looseObject({ type: z.string().min(1) });
export type ResponsesInputPart = z.infer<typeof ResponsesInputPart>;

/** `EasyInputMessage` / `InputMessage` / a replayed `OutputMessage`: `type` may be left out. */
export const ResponsesInputMessage = z.looseObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(ResponsesInputPart)]),
});
export type ResponsesInputMessage = z.infer<typeof ResponsesInputMessage>;

/** A function call the model made earlier (`FunctionToolCall`), sent back with its result. */
export const ResponsesFunctionCall = z.looseObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  id: z.string().nullish(),
});
export type ResponsesFunctionCall = z.infer<typeof ResponsesFunctionCall>;

/** The caller's result for a function call (`FunctionCallOutputItemParam`). */
export const ResponsesFunctionCallOutput = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(ResponsesInputPart)]),
});
export type ResponsesFunctionCallOutput = z.infer<typeof ResponsesFunctionCallOutput>;

const itemSchemas: Record<string, z.ZodType> = {
  message: ResponsesInputMessage,
  function_call: ResponsesFunctionCall,
  function_call_output: ResponsesFunctionCallOutput,
};

/**
 * One input item. The three kinds we read are checked field by field (a zod issue names e.g.
 * `input[2].call_id`); any other `type` passes here and is refused by the translation by name.
 */
export const ResponsesInputItem = z.looseObject({ type: z.string().min(1).optional() }).superRefine((item, ctx) => {
  const schema = itemSchemas[item.type ?? "message"];
  if (!schema) return;
  const parsed = schema.safeParse(item);
  if (parsed.success) return;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
});
export type ResponsesInputItem = z.infer<typeof ResponsesInputItem>;

export const ResponsesFunctionTool = z.looseObject({
  type: z.literal("function"),
  name: toolName,
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
export type ResponsesFunctionTool = z.infer<typeof ResponsesFunctionTool>;

/** A tool: `FunctionTool` checked; built-in tools (web_search, file_search, mcp, …) pass here and are refused by type. */
export const ResponsesTool = z.looseObject({ type: z.string().min(1) }).superRefine((tool, ctx) => {
  if (tool.type !== "function") return;
  const parsed = ResponsesFunctionTool.safeParse(tool);
  if (parsed.success) return;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
});
export type ResponsesTool = z.infer<typeof ResponsesTool>;

/** `ToolChoiceParam`: the options, a named function, `allowed_tools`, or a hosted tool (refused later). */
export const ResponsesToolChoice = z.union([z.enum(["none", "auto", "required"]), z.looseObject({ type: z.string().min(1) })]);
export type ResponsesToolChoice = z.infer<typeof ResponsesToolChoice>;

/** `TextResponseFormatConfiguration`. */
export const ResponsesTextFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string().min(1).max(64),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().nullish(),
    strict: z.boolean().nullish(),
  }),
]);
export type ResponsesTextFormat = z.infer<typeof ResponsesTextFormat>;

/** `CreateResponse`. `input` is required: without stored state there is nothing else to answer. */
export const ResponsesRequest = z.looseObject({
  model: ModelName,
  input: z.union([z.string(), z.array(ResponsesInputItem)], {
    error: (issue) => (issue.input === undefined ? "input is required" : "input must be a string or a list of input items"),
  }),
  instructions: z.string().nullish(),
  tools: z.array(ResponsesTool).max(128).nullish(),
  tool_choice: ResponsesToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
  text: z.looseObject({ format: ResponsesTextFormat.nullish(), verbosity: z.enum(["low", "medium", "high"]).nullish() }).nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish(), summary: z.string().nullish() }).nullish(),
  previous_response_id: z.string().nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  prompt_cache_key: z.string().nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  include: z.array(z.string()).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
});
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

// ------------------------------------------------------------------------------------- answers

/** `ResponseUsage`: both detail objects and their counts are required by the spec. */
export const ResponsesUsage = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int(), cache_write_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
});
export type ResponsesUsage = z.infer<typeof ResponsesUsage>;

export const ResponsesOutputText = z.object({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.array(z.unknown()),
  logprobs: z.array(z.unknown()),
});
export const ResponsesRefusal = z.object({ type: z.literal("refusal"), refusal: z.string() });
export const ResponsesOutputContent = z.discriminatedUnion("type", [ResponsesOutputText, ResponsesRefusal]);
export type ResponsesOutputContent = z.infer<typeof ResponsesOutputContent>;

const itemStatus = z.enum(["in_progress", "completed", "incomplete"]);

export const ResponsesOutputMessage = z.object({
  type: z.literal("message"),
  id: z.string(),
  status: itemStatus,
  role: z.literal("assistant"),
  content: z.array(ResponsesOutputContent),
});
export const ResponsesOutputFunctionCall = z.object({
  type: z.literal("function_call"),
  id: z.string(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  status: itemStatus,
});
/** What this gateway puts in `output`: assistant messages and function calls (no hosted-tool items). */
export const ResponsesOutputItem = z.discriminatedUnion("type", [ResponsesOutputMessage, ResponsesOutputFunctionCall]);
export type ResponsesOutputItem = z.infer<typeof ResponsesOutputItem>;

/** `Response`: every field the spec requires, plus the echoes OpenAI sends. */
export const ResponsesResponse = z.looseObject({
  id: z.string(),
  object: z.literal("response"),
  created_at: z.number().int(),
  status: z.enum(["completed", "failed", "in_progress", "cancelled", "queued", "incomplete"]),
  completed_at: z.number().int().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  incomplete_details: z.object({ reason: z.enum(["max_output_tokens", "content_filter"]) }).nullable(),
  instructions: z.string().nullable(),
  model: z.string(),
  output: z.array(ResponsesOutputItem),
  tools: z.array(z.record(z.string(), z.unknown())),
  tool_choice: ResponsesToolChoice,
  parallel_tool_calls: z.boolean(),
  temperature: z.number().nullable(),
  top_p: z.number().nullable(),
  metadata: z.record(z.string(), z.string()),
  usage: ResponsesUsage.optional(),
});
export type ResponsesResponse = z.infer<typeof ResponsesResponse>;

/** One SSE event of a streamed response; `type` is also the SSE `event:` name. */
export const ResponsesStreamEvent = z.looseObject({ type: z.string(), sequence_number: z.number().int() });
export type ResponsesStreamEvent = z.infer<typeof ResponsesStreamEvent>;
