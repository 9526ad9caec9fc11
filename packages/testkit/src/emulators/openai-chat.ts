import {
  applyStop,
  countTokens,
  cumulative,
  fragments,
  isRecord,
  jsonTokens,
  limitTokens,
  pieces,
  prefixHashes,
  randomId,
  rememberKey,
  valueForSchema,
} from "./synthetic";
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
 *
 * Reasoning models (o1/o3/o4/gpt-5 ids, or any request with `reasoning_effort`) also "think": a
 * fixed number of reasoning tokens per effort, counted in completion_tokens and spent first from
 * `max_completion_tokens`, as OpenAI does. With a prompt cache, repeated prefixes are reported
 * in `prompt_tokens_details.cached_tokens`.
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
  /** Of promptTokens, those served from the prompt cache. */
  cachedTokens: number;
  /** Per choice; includes reasoningTokens. */
  completionTokens: number;
  /** Per choice. */
  reasoningTokens: number;
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

/** Model ids that reason before answering (the `-chat` variants of gpt-5 do not). */
export function isReasoningModel(model: string): boolean {
  return /^(o1|o3|o4|gpt-5)/.test(model) && !model.includes("-chat");
}

/** Reasoning tokens per choice for each `reasoning_effort` (the spec's default is medium). */
const REASONING_TOKENS: Record<string, number> = { none: 0, minimal: 8, low: 32, medium: 64, high: 128, xhigh: 256, max: 512 };

function reasoningBudget(body: JsonObject, model: string): number {
  const effort = typeof body.reasoning_effort === "string" ? body.reasoning_effort : undefined;
  if (effort === undefined && !isReasoningModel(model)) return 0;
  return REASONING_TOKENS[effort ?? "medium"] ?? REASONING_TOKENS.medium!;
}

/** OpenAI caches in 128-token steps ("cache hits occur in 128-token increments"). */
const CACHE_INCREMENT = 128;

export interface ChatPromptCache {
  /** Cached tokens for this prompt, after which the prompt itself is cached (when long enough). */
  settle(seed: string, messages: readonly { key: string; tokens: number }[]): number;
  clear(): void;
}

/**
 * OpenAI's automatic prompt caching at message granularity, without the clock: a prompt of at
 * least `minTokens` (default 1024) is cached with all its leading-message prefixes, and a later
 * prompt gets the longest one it starts with, rounded down to 128 tokens (0 below the minimum).
 */
export function createChatPromptCache(opts: { minTokens?: number } = {}): ChatPromptCache {
  const min = opts.minTokens ?? 1024;
  const cached = new Set<string>();
  return {
    settle(seed, messages) {
      const totals = cumulative(messages.map((m) => m.tokens));
      // A shorter prompt can neither hit (its prefixes are shorter still) nor be cached: skip hashing.
      if ((totals.at(-1) ?? 0) < min) return 0;
      const hashes = prefixHashes(
        seed,
        messages.map((m) => m.key),
      );
      let common = 0;
      for (let i = hashes.length - 1; i >= 0; i--) {
        if (!cached.has(hashes[i]!)) continue;
        common = totals[i]!;
        break;
      }
      for (const hash of hashes) rememberKey(cached, hash);
      const hit = Math.floor(common / CACHE_INCREMENT) * CACHE_INCREMENT;
      return hit >= min ? hit : 0;
    },
    clear: () => cached.clear(),
  };
}

/** Plans the answer; with a prompt cache, repeated prefixes count as cached tokens. */
export function planChat(body: JsonObject, promptCache?: ChatPromptCache): ChatPlan {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  const last = [...messages].reverse().find((m) => m.role === "user" || m.role === "tool");
  const text = last ? messageText(last.content) : "";
  const lastRole = typeof messages.at(-1)?.role === "string" ? String(messages.at(-1)?.role) : "";
  const model = typeof body.model === "string" ? body.model : "";
  const counted = messages.map((m) => ({ key: JSON.stringify(m), tokens: countTokens(messageText(m.content)) }));
  const promptTokens = Math.max(
    1,
    counted.reduce((n, m) => n + m.tokens, 0),
  );
  // Tools and the output schema come before the messages in the prompt OpenAI caches.
  const seed = JSON.stringify([model, body.tools ?? null, body.response_format ?? null]);
  const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
  const base = {
    model,
    n: typeof body.n === "number" && body.n >= 1 ? Math.floor(body.n) : 1,
    promptTokens,
    cachedTokens: promptCache ? promptCache.settle(seed, counted) : 0,
    includeUsage: streamOptions.include_usage === true,
    obfuscation: streamOptions.include_obfuscation !== false,
  };
  const max = [body.max_completion_tokens, body.max_tokens].find((v): v is number => typeof v === "number");
  // Reasoning comes first, so it spends max_completion_tokens before any visible text.
  const reasoningTokens = Math.max(0, Math.min(reasoningBudget(body, model), Math.floor(max ?? Number.POSITIVE_INFINITY)));

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
    const completionTokens = reasoningTokens + toolCalls.reduce((n, c) => n + jsonTokens(c.arguments), 0);
    return { ...base, content: null, toolCalls, finishReason: "tool_calls", completionTokens, reasoningTokens };
  }

  let content = structuredContent(body.response_format, text) ?? `Echo: ${text}`;
  const stopped = applyStop(content, stopList(body.stop));
  const limited = limitTokens(stopped.text, max === undefined ? undefined : max - reasoningTokens);
  content = limited.text;
  const finishReason = limited.truncated ? "length" : "stop";
  return { ...base, content, toolCalls: [], finishReason, completionTokens: reasoningTokens + countTokens(content), reasoningTokens };
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
    prompt_tokens_details: { cached_tokens: plan.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: plan.reasoningTokens * plan.n,
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
