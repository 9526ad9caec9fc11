import { applyStop, countTokens, isRecord, limitTokens, pieces } from "./synthetic";
import type { JsonObject } from "./synthetic";
import { SYSTEM_FINGERPRINT } from "./openai-chat";

/**
 * Legacy `POST /completions` (provider-wire-formats.md §3.8, schema `CreateCompletionResponse`,
 * which the spec says both streamed and non-streamed answers share). Text is `Echo: <prompt>` per
 * prompt, cut by `stop` and by `max_tokens`, whose spec default is 16 (→ finish_reason "length").
 * `echo: true` prepends the prompt. One choice per prompt × n, indexed prompt-major as OpenAI does.
 */

interface Choice {
  text: string;
  finishReason: "stop" | "length";
}

export interface CompletionPlan {
  model: string;
  choices: Choice[];
  promptTokens: number;
  completionTokens: number;
  includeUsage: boolean;
}

export function planCompletion(body: JsonObject): CompletionPlan {
  const prompts = promptList(body.prompt);
  const n = typeof body.n === "number" && body.n >= 1 ? Math.floor(body.n) : 1;
  const max = typeof body.max_tokens === "number" ? body.max_tokens : 16;
  const stops = typeof body.stop === "string" ? [body.stop] : Array.isArray(body.stop) ? body.stop.filter((s): s is string => typeof s === "string") : [];
  const choices: Choice[] = [];
  let completionTokens = 0;
  for (const prompt of prompts) {
    const limited = limitTokens(applyStop(`Echo: ${prompt}`, stops).text, max);
    completionTokens += countTokens(limited.text) * n;
    for (let i = 0; i < n; i++) {
      choices.push({
        text: body.echo === true ? prompt + limited.text : limited.text,
        finishReason: limited.truncated ? "length" : "stop",
      });
    }
  }
  const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
  return {
    model: typeof body.model === "string" ? body.model : "",
    choices,
    promptTokens: Math.max(
      1,
      prompts.reduce((t, p) => t + countTokens(p), 0),
    ),
    completionTokens,
    includeUsage: streamOptions.include_usage === true,
  };
}

function promptList(prompt: unknown): string[] {
  if (typeof prompt === "string") return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0) return [""];
  if (prompt.every((p) => typeof p === "number")) return [prompt.join(" ")];
  return prompt.map((p) => (typeof p === "string" ? p : Array.isArray(p) ? p.join(" ") : ""));
}

function usage(plan: CompletionPlan): JsonObject {
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.completionTokens,
    total_tokens: plan.promptTokens + plan.completionTokens,
  };
}

export function completion(plan: CompletionPlan, id: string, created: number): JsonObject {
  return {
    id,
    object: "text_completion",
    created,
    model: plan.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: plan.choices.map((c, index) => ({ text: c.text, index, logprobs: null, finish_reason: c.finishReason })),
    usage: usage(plan),
  };
}

/**
 * Streamed legacy completion, keyed like the spec's streaming example (id, object, created, choices,
 * model, system_fingerprint): text pieces with `finish_reason: null`, an empty-text chunk with the
 * finish_reason, then with include_usage a `choices: []` usage chunk, then [DONE]. With include_usage
 * the other chunks carry `usage: null` (ChatCompletionStreamOptions, which /completions shares).
 * Note the spec contradicts itself here: CreateCompletionResponse (said to be the chunk shape too)
 * allows neither a null finish_reason nor a null usage, yet its own example streams both.
 */
export function completionFrames(plan: CompletionPlan, id: string, created: number): string[] {
  const frames: string[] = [];
  const push = (choices: JsonObject[], usageValue?: JsonObject) => {
    const chunk: JsonObject = {
      id,
      object: "text_completion",
      created,
      choices,
      model: plan.model,
      system_fingerprint: SYSTEM_FINGERPRINT,
    };
    if (plan.includeUsage) chunk.usage = usageValue ?? null;
    frames.push(`data: ${JSON.stringify(chunk)}\n\n`);
  };
  plan.choices.forEach((c, index) => {
    for (const piece of pieces(c.text)) push([{ text: piece, index, logprobs: null, finish_reason: null }]);
    push([{ text: "", index, logprobs: null, finish_reason: c.finishReason }]);
  });
  if (plan.includeUsage) push([], usage(plan));
  frames.push("data: [DONE]\n\n");
  return frames;
}
