import { applyStop, countTokens, fragments, isRecord, jsonTokens, limitTokens, pieces, randomId, valueForSchema } from "./synthetic";
import type { JsonObject } from "./synthetic";

/**
 * Chat Completions answers (openai-openapi.json `CreateChatCompletionResponse` /
 * `CreateChatCompletionStreamResponse`; wire details per provider-wire-formats.md §3.2).
 *
 * Content is `Echo: <text of the last user or tool message>`. With `tools` (and tool_choice not
 * "none") the answer is a tool call instead: to the named tool, else the first tool, and the first
 * two in parallel when two or more are given and `parallel_tool_calls` is not false. Arguments are
 * built from each tool's parameter schema with the last user text (see valueForSchema). A request
 * whose last message is a tool result gets text unless a tool is forced, so agent loops terminate.
 */

export interface ToolCallPlan {
  id: string;
  name: string;
  arguments: string;
}

export interface ChatPlan {
  model: string;
  n: number;
  content: string | null;
  toolCalls: ToolCallPlan[];
  finishReason: "stop" | "length" | "tool_calls";
  promptTokens: number;
  /** Per choice. */
  completionTokens: number;
  includeUsage: boolean;
  obfuscation: boolean;
}

export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) => (isRecord(p) && typeof p.text === "string" ? p.text : ""))
    .filter(Boolean)
    .join(" ");
}

function stopList(stop: unknown): string[] {
  if (typeof stop === "string") return [stop];
  return Array.isArray(stop) ? stop.filter((s): s is string => typeof s === "string") : [];
}

function functionTools(tools: unknown): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter((t): t is JsonObject => isRecord(t) && t.type === "function" && isRecord(t.function));
}

function pickTools(body: JsonObject, lastRole: string): JsonObject[] {
  const tools = functionTools(body.tools);
  const choice = body.tool_choice;
  if (tools.length === 0 || choice === "none") return [];
  if (isRecord(choice) && choice.type === "function" && isRecord(choice.function)) {
    const name = choice.function.name;
    const named = tools.find((t) => isRecord(t.function) && t.function.name === name);
    return [named ?? { type: "function", function: { name } }];
  }
  if (choice !== "required" && lastRole === "tool") return [];
  return tools.length >= 2 && body.parallel_tool_calls !== false ? tools.slice(0, 2) : tools.slice(0, 1);
}

export function planChat(body: JsonObject): ChatPlan {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  const last = [...messages].reverse().find((m) => m.role === "user" || m.role === "tool");
  const text = last ? messageText(last.content) : "";
  const lastRole = typeof messages.at(-1)?.role === "string" ? String(messages.at(-1)?.role) : "";
  const promptTokens = Math.max(
    1,
    messages.reduce((n, m) => n + countTokens(messageText(m.content)), 0),
  );
  const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
  const base = {
    model: typeof body.model === "string" ? body.model : "",
    n: typeof body.n === "number" && body.n >= 1 ? Math.floor(body.n) : 1,
    promptTokens,
    includeUsage: streamOptions.include_usage === true,
    obfuscation: streamOptions.include_obfuscation !== false,
  };

  const tools = pickTools(body, lastRole);
  if (tools.length > 0) {
    const toolCalls = tools.map((t) => {
      const fn = isRecord(t.function) ? t.function : {};
      return {
        id: `call_${randomId(24)}`,
        name: typeof fn.name === "string" ? fn.name : "",
        arguments: JSON.stringify(valueForSchema(fn.parameters, text)),
      };
    });
    const completionTokens = toolCalls.reduce((n, c) => n + jsonTokens(c.arguments), 0);
    return { ...base, content: null, toolCalls, finishReason: "tool_calls", completionTokens };
  }

  let content = structuredContent(body.response_format, text) ?? `Echo: ${text}`;
  const stopped = applyStop(content, stopList(body.stop));
  const max = [body.max_completion_tokens, body.max_tokens].find((v): v is number => typeof v === "number");
  const limited = limitTokens(stopped.text, max);
  content = limited.text;
  const finishReason = limited.truncated ? "length" : "stop";
  return { ...base, content, toolCalls: [], finishReason, completionTokens: countTokens(content) };
}

/** json_schema → a value of that schema; json_object → {"echo": text}. */
function structuredContent(format: unknown, text: string): string | undefined {
  if (!isRecord(format)) return undefined;
  if (format.type === "json_object") return JSON.stringify({ echo: text });
  if (format.type === "json_schema" && isRecord(format.json_schema)) {
    return JSON.stringify(valueForSchema(format.json_schema.schema, text));
  }
  return undefined;
}

function usage(plan: ChatPlan): JsonObject {
  const completion = plan.completionTokens * plan.n;
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

export const SYSTEM_FINGERPRINT = "fp_emu0000001";

export function chatCompletion(plan: ChatPlan, id: string, created: number): JsonObject {
  const message: JsonObject = { role: "assistant", content: plan.content, refusal: null, annotations: [] };
  if (plan.toolCalls.length > 0) {
    message.tool_calls = plan.toolCalls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  const choices = Array.from({ length: plan.n }, (_, index) => ({
    index,
    message,
    logprobs: null,
    finish_reason: plan.finishReason,
  }));
  return {
    id,
    object: "chat.completion",
    created,
    model: plan.model,
    choices,
    usage: usage(plan),
    service_tier: "default",
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

/** `data:` frames for a streamed answer, `[DONE]` included. */
export function chatCompletionFrames(plan: ChatPlan, id: string, created: number): string[] {
  const frames: string[] = [];
  const push = (choices: JsonObject[], usageValue?: JsonObject) => {
    const chunk: JsonObject = {
      id,
      object: "chat.completion.chunk",
      created,
      model: plan.model,
      service_tier: "default",
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices,
    };
    // include_usage: every chunk carries `usage`, null except on the final choices:[] chunk.
    if (plan.includeUsage) chunk.usage = usageValue ?? null;
    // Spec: obfuscation padding is on by default; a fixed pad keeps the stream deterministic.
    if (plan.obfuscation) chunk.obfuscation = "emu".slice(0, 1 + (frames.length % 3));
    frames.push(`data: ${JSON.stringify(chunk)}\n\n`);
  };
  const delta = (index: number, d: JsonObject, finish: string | null = null) => push([{ index, delta: d, logprobs: null, finish_reason: finish }]);

  for (let index = 0; index < plan.n; index++) {
    if (plan.toolCalls.length > 0) {
      plan.toolCalls.forEach((call, k) => {
        const head = { index: k, id: call.id, type: "function", function: { name: call.name, arguments: "" } };
        delta(index, k === 0 ? { role: "assistant", content: null, tool_calls: [head] } : { tool_calls: [head] });
        for (const piece of fragments(call.arguments)) {
          delta(index, { tool_calls: [{ index: k, function: { arguments: piece } }] });
        }
      });
    } else {
      delta(index, { role: "assistant", content: "" });
      for (const piece of pieces(plan.content ?? "")) delta(index, { content: piece });
    }
    delta(index, {}, plan.finishReason);
  }
  if (plan.includeUsage) push([], usage(plan));
  frames.push("data: [DONE]\n\n");
  return frames;
}
