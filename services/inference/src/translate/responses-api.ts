import { randomBytes } from "node:crypto";
import type {
  ChatCompletion,
  ChatCompletionRequest,
  ChatMessage,
  ChatTool,
  ChatToolCall,
  ResponsesFunctionTool,
  ResponsesInputPart,
  ResponsesOutputContent,
  ResponsesOutputItem,
  ResponsesRequest,
  ResponsesResponse,
  ResponsesUsage,
  Usage,
} from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { isRecord, textOf, toolCallsOf } from "./common";

/**
 * OpenAI Responses API ⇄ Chat Completions, the non-streamed half (streams are in
 * responses-api-stream.ts). `/v1/responses` is served statelessly on top of the chat operation, so
 * every provider answers it: Anthropic-kind ones through the chat ⇄ messages translation after this
 * one. Pure functions; the rules are in README.md beside this file ("Responses API").
 */

/** A Responses request as a chat request, and the way back from chat parameter names to its own. */
export interface ResponsesAsChat {
  chat: ChatCompletionRequest;
  /**
   * A 400 raised further down (by the chat ⇄ messages translation) names a chat parameter, e.g.
   * `messages[2].content[0].type` or `response_format`; this names the caller's field instead.
   */
  inCallerTerms(error: GatewayError): GatewayError;
}

/** Where each chat message and tool came from in the Responses request. */
interface Sources {
  messages: { at: string; kind: "instructions" | "input" | "message" | "call_output"; calls: string[] }[];
  tools: string[];
}

/** `model` stays the public name, as on the chat route: the adapter puts the upstream name in. */
export function responsesRequestToChat(req: ResponsesRequest): ResponsesAsChat {
  for (const r of refusals) if (r.refuse(req)) throw invalid(r.param, r.message);
  const sources: Sources = { messages: [], tools: [] };
  const messages: ChatMessage[] = [];
  const push = (m: ChatMessage, source: Sources["messages"][number]) => {
    messages.push(m);
    sources.messages.push(source);
  };

  if (req.instructions) push({ role: "system", content: req.instructions }, { at: "instructions", kind: "instructions", calls: [] });
  if (typeof req.input === "string") {
    push({ role: "user", content: req.input }, { at: "input", kind: "input", calls: [] });
  } else {
    req.input.forEach((item, i) => {
      const at = `input[${i}]`;
      const type = item.type ?? "message";
      if (type === "message") {
        const role = String(item.role);
        push({ role, content: messageContent(role, item.content as string | ResponsesInputPart[], `${at}.content`) }, { at, kind: "message", calls: [] });
      } else if (type === "function_call") {
        const call: ChatToolCall = { id: String(item.call_id), type: "function", function: { name: String(item.name), arguments: String(item.arguments) } };
        // Calls right after an assistant message (or after each other) belong to that turn.
        const last = messages.at(-1);
        const lastSource = sources.messages.at(-1);
        if (last?.role === "assistant" && lastSource) {
          last.tool_calls = [...(last.tool_calls ?? []), call];
          lastSource.calls.push(at);
        } else {
          push({ role: "assistant", content: null, tool_calls: [call] }, { at, kind: "message", calls: [at] });
        }
      } else if (type === "function_call_output") {
        const content = callOutputContent(item.output as string | ResponsesInputPart[], `${at}.output`);
        push({ role: "tool", tool_call_id: String(item.call_id), content }, { at, kind: "call_output", calls: [] });
      } else {
        throw invalid(`${at}.type`, unsupportedItem(type));
      }
    });
  }
  if (messages.length === 0) throw invalid("input", "input must contain at least one item.");

  const chat: ChatCompletionRequest = { model: req.model, messages };
  const tools = chatTools(req, sources);
  if (tools.length > 0) chat.tools = tools;
  const choice = chatToolChoice(req, tools, sources);
  if (choice !== undefined) chat.tool_choice = choice;
  if (req.parallel_tool_calls != null) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (req.max_output_tokens != null) chat.max_completion_tokens = req.max_output_tokens;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  if (req.stream != null) chat.stream = req.stream;
  const format = req.text?.format;
  if (format?.type === "json_object") chat.response_format = { type: "json_object" };
  if (format?.type === "json_schema") {
    const { name, schema, description, strict } = format;
    chat.response_format = {
      type: "json_schema",
      json_schema: { name, schema, ...(description != null ? { description } : {}), ...(strict != null ? { strict } : {}) },
    };
  }
  // "medium" is the default: sending it would only trip models (and servers) that do not know the field.
  if (req.text?.verbosity != null && req.text.verbosity !== "medium") chat.verbosity = req.text.verbosity;
  if (req.reasoning?.effort != null) chat.reasoning_effort = req.reasoning.effort;
  if (req.user != null) chat.user = req.user;
  // Same names and meaning in chat; the chat ⇄ messages translation drops the caching ones.
  for (const key of ["safety_identifier", "prompt_cache_key", "prompt_cache_retention"] as const) {
    if (req[key] != null) chat[key] = req[key];
  }
  return { chat, inCallerTerms: (error) => inCallerTerms(error, sources) };
}

interface Refusal {
  param: string;
  refuse: (r: ResponsesRequest) => boolean;
  message: string;
}

const stateless = "this gateway does not store responses (store is always false); send the whole conversation in input";

const refusals: Refusal[] = [
  { param: "previous_response_id", refuse: (r) => r.previous_response_id != null, message: `previous_response_id is not supported: ${stateless}.` },
  { param: "conversation", refuse: (r) => r.conversation != null, message: `conversation is not supported: ${stateless}.` },
  { param: "background", refuse: (r) => r.background === true, message: "background responses are not supported: they need stored responses to poll." },
  { param: "prompt", refuse: (r) => r.prompt != null, message: "Stored prompt templates are not supported; send instructions and input instead." },
  { param: "top_logprobs", refuse: (r) => (r.top_logprobs ?? 0) > 0, message: "top_logprobs is not supported on /v1/responses." },
  {
    param: "include",
    refuse: (r) => (r.include ?? []).includes("message.output_text.logprobs"),
    message: "include message.output_text.logprobs is not supported on /v1/responses.",
  },
  { param: "moderation", refuse: (r) => r.moderation != null, message: "moderation is not supported on /v1/responses." },
  {
    param: "context_management",
    refuse: (r) => Array.isArray(r.context_management) && r.context_management.length > 0,
    message: "context_management (compaction) is not supported on /v1/responses.",
  },
  {
    param: "reasoning.mode",
    refuse: (r) => r.reasoning?.mode != null && r.reasoning.mode !== "standard",
    message: "reasoning.mode other than standard is not supported on /v1/responses.",
  },
];

function unsupportedItem(type: string): string {
  if (type === "item_reference") return `Item references are not supported: ${stateless}.`;
  if (type === "reasoning") return "Reasoning items are not supported: this gateway returns none, so send the conversation without them.";
  return `Input items of type "${type}" are not supported; use messages, function_call and function_call_output items.`;
}

/** Message content: a string stays one; parts map one to one (so error paths keep their index). */
function messageContent(role: string, content: string | ResponsesInputPart[], at: string): ChatMessage["content"] {
  if (typeof content === "string") return content;
  if (role === "assistant") {
    // Replayed output: the text (and any refusal, which is what the assistant said) as one string.
    return content
      .map((part, j) => {
        if (part.type === "output_text" || part.type === "input_text") return requireString(part.text, `${at}[${j}].text`);
        if (part.type === "refusal") return requireString(part.refusal, `${at}[${j}].refusal`);
        throw invalid(`${at}[${j}].type`, `Assistant content parts of type "${part.type}" are not supported.`);
      })
      .join("");
  }
  return content.map((part, j) => {
    const where = `${at}[${j}]`;
    if (part.type === "input_text") return { type: "text", text: requireString(part.text, `${where}.text`) };
    if (role === "system" || role === "developer") throw invalid(`${where}.type`, "System and developer messages may only contain input_text.");
    if (part.type === "input_image") return imagePart(part, where);
    if (part.type === "input_file") return filePart(part, where);
    throw invalid(`${where}.type`, `Content parts of type "${part.type}" are not supported in ${role} messages.`);
  });
}

function imagePart(part: ResponsesInputPart, at: string): { type: string; [key: string]: unknown } {
  if (typeof part.image_url !== "string" || !part.image_url) {
    if (part.file_id != null) throw invalid(`${at}.file_id`, "file_id is not supported: send image_url (an http(s) URL or a base64 data URI).");
    throw invalid(`${at}.image_url`, "input_image needs image_url (an http(s) URL or a base64 data URI).");
  }
  // "original" has no chat equivalent; the default resolution is the closest.
  const detail = ["low", "high", "auto"].includes(String(part.detail)) ? { detail: part.detail } : {};
  return { type: "image_url", image_url: { url: part.image_url, ...detail } };
}

function filePart(part: ResponsesInputPart, at: string): { type: string; [key: string]: unknown } {
  if (typeof part.file_data !== "string" || !part.file_data) {
    const field = part.file_url != null ? "file_url" : part.file_id != null ? "file_id" : "file_data";
    throw invalid(`${at}.${field}`, "input_file needs file_data (a base64 data URI); file_id and file_url are not supported.");
  }
  return { type: "file", file: { file_data: part.file_data, ...(typeof part.filename === "string" ? { filename: part.filename } : {}) } };
}

/** A function's result: a string, or text parts (chat tool messages carry nothing else). */
function callOutputContent(output: string | ResponsesInputPart[], at: string): ChatMessage["content"] {
  if (typeof output === "string") return output;
  return output.map((part, j) => {
    if (part.type === "input_text") return { type: "text", text: requireString(part.text, `${at}[${j}].text`) };
    throw invalid(`${at}[${j}].type`, `Function call outputs may only contain input_text parts here, not "${part.type}".`);
  });
}

function chatTools(req: ResponsesRequest, sources: Sources): ChatTool[] {
  const tools: ChatTool[] = [];
  (req.tools ?? []).forEach((tool, j) => {
    const at = `tools[${j}]`;
    if (tool.type !== "function") {
      throw invalid(`${at}.type`, `Built-in tools ("${tool.type}") are not supported on /v1/responses; only function tools are.`);
    }
    const fn = tool as ResponsesFunctionTool;
    if (fn.defer_loading === true) throw invalid(`${at}.defer_loading`, "Deferred tool loading (tool search) is not supported.");
    const out: ChatTool["function"] = { name: fn.name };
    if (fn.description != null) out.description = fn.description;
    if (fn.parameters != null) out.parameters = fn.parameters;
    if (fn.strict != null) out.strict = fn.strict;
    tools.push({ type: "function", function: out });
    sources.tools.push(at);
  });
  return tools;
}

/**
 * `allowed_tools` keeps the listed functions and drops the others from the chat request: the model
 * may only call those either way (what changes is OpenAI's prompt caching, not the answer).
 */
function chatToolChoice(req: ResponsesRequest, tools: ChatTool[], sources: Sources): ChatCompletionRequest["tool_choice"] | undefined {
  const c = req.tool_choice;
  if (c == null) return undefined;
  if (typeof c === "string") return c;
  if (c.type === "function") {
    if (typeof c.name !== "string" || !c.name) throw invalid("tool_choice.name", "tool_choice of type function needs a name.");
    return { type: "function", function: { name: c.name } };
  }
  if (c.type === "allowed_tools") {
    if (c.mode !== "auto" && c.mode !== "required") throw invalid("tool_choice.mode", 'tool_choice.mode must be "auto" or "required".');
    const listed = Array.isArray(c.tools) ? (c.tools as unknown[]) : [];
    const names = listed.map((t, k) => {
      if (!isRecord(t) || t.type !== "function" || typeof t.name !== "string") {
        throw invalid(`tool_choice.tools[${k}]`, 'allowed_tools may only list function tools here, as {type:"function", name}.');
      }
      if (!tools.some((tool) => tool.function.name === t.name)) throw invalid(`tool_choice.tools[${k}].name`, `No function tool named "${t.name}" in tools.`);
      return t.name;
    });
    const kept = tools.flatMap((tool, j) => (names.includes(tool.function.name) ? [{ tool, at: sources.tools[j] ?? `tools[${j}]` }] : []));
    tools.splice(0, tools.length, ...kept.map((k) => k.tool));
    sources.tools.splice(0, sources.tools.length, ...kept.map((k) => k.at));
    return c.mode;
  }
  throw invalid("tool_choice", `tool_choice of type "${c.type}" is not supported on /v1/responses; only function tools are.`);
}

// ---------------------------------------------------------------------------------- error names

/** Chat parameters whose Responses name differs (the rest keep their name: temperature, top_p, …). */
const renamed: Record<string, string> = {
  response_format: "text.format",
  max_completion_tokens: "max_output_tokens",
  max_tokens: "max_output_tokens",
  reasoning_effort: "reasoning.effort",
  verbosity: "text.verbosity",
  messages: "input",
};

function inCallerTerms(error: GatewayError, sources: Sources): GatewayError {
  const param = error.param;
  if (!param) return error;
  const ours = callerParam(param, sources);
  if (ours === param) return error;
  // A renamed top-level parameter is also renamed in the prose ("response_format json_schema is …").
  const top = /^[a-z_]+/.exec(param)?.[0] ?? "";
  let message = error.message.split(param).join(ours);
  if (top !== "messages" && renamed[top]) message = message.replace(new RegExp(`\\b${top}\\b`, "g"), renamed[top]);
  return new GatewayError(error.code, message, {
    param: ours,
    status: error.status,
    ...(error.type ? { type: error.type } : {}),
    headers: error.headers,
    retryable: error.retryable,
    cause: error,
  });
}

function callerParam(param: string, sources: Sources): string {
  const message = /^messages\[(\d+)\](.*)$/.exec(param);
  if (message) {
    const source = sources.messages[Number(message[1])];
    const rest = message[2] ?? "";
    if (!source) return param;
    if (source.kind === "instructions" || source.kind === "input") return source.at;
    const call = /^\.tool_calls\[(\d+)\](?:\.function)?(.*)$/.exec(rest);
    if (call) return `${source.calls[Number(call[1])] ?? source.at}${call[2] ?? ""}`;
    if (source.kind === "call_output") return source.at + rest.replace(/^\.content/, ".output").replace(/^\.tool_call_id/, ".call_id");
    return source.at + rest.replace(/\.image_url\.url$/, ".image_url");
  }
  const tool = /^tools\[(\d+)\](?:\.function)?(.*)$/.exec(param);
  if (tool) return `${sources.tools[Number(tool[1])] ?? `tools[${tool[1]}]`}${tool[2] ?? ""}`;
  const top = /^[a-z_]+/.exec(param)?.[0] ?? "";
  return top in renamed ? `${renamed[top]}${param.slice(top.length)}` : param;
}

// ------------------------------------------------------------------------------------- answers

export type IdMaker = (prefix: "resp" | "msg" | "fc") => string;

/** OpenAI-like ids: the prefix, an underscore and 48 hex digits. */
export const randomIds: IdMaker = (prefix) => `${prefix}_${randomBytes(24).toString("hex")}`;

/**
 * The Response object before any output: every field the spec requires, echoing what was asked
 * (defaults as OpenAI reports them) and what was applied: `store` is always false, `truncation`
 * always "disabled" (nothing is truncated here), `previous_response_id` always null.
 */
export function responseShell(req: ResponsesRequest, id: string, createdAt: number = nowSeconds()): ResponsesResponse {
  return {
    id,
    object: "response",
    created_at: createdAt,
    status: "in_progress",
    background: false,
    completed_at: null,
    error: null,
    incomplete_details: null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: typeof req.max_tool_calls === "number" ? req.max_tool_calls : null,
    model: req.model,
    output: [],
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: req.prompt_cache_key ?? null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: null },
    safety_identifier: req.safety_identifier ?? null,
    store: false,
    temperature: req.temperature ?? 1,
    text: { format: req.text?.format ?? { type: "text" }, verbosity: req.text?.verbosity ?? "medium" },
    tool_choice: req.tool_choice ?? "auto",
    tools: (req.tools ?? []).map((t) => echoTool(t as ResponsesFunctionTool)),
    top_logprobs: req.top_logprobs ?? 0,
    top_p: req.top_p ?? 1,
    truncation: "disabled",
    ...(req.user != null ? { user: req.user } : {}),
    metadata: req.metadata ?? {},
  };
}

/** `FunctionTool` requires `parameters` and `strict`; the chat default (not strict) is what applies here. */
function echoTool(t: ResponsesFunctionTool): Record<string, unknown> {
  return { type: "function", name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? false };
}

/** chat.completion (its first choice) → the finished Response. */
export function chatCompletionToResponse(
  c: ChatCompletion,
  shell: ResponsesResponse,
  ids: IdMaker = randomIds,
  completedAt: number = nowSeconds(),
): ResponsesResponse {
  const choice = c.choices[0];
  const message: Record<string, unknown> = choice?.message ?? {};
  const end = endOf(choice?.finish_reason);
  const output: ResponsesOutputItem[] = [];
  const text = textOf(message.content);
  const refusal = typeof message.refusal === "string" && message.refusal ? message.refusal : undefined;
  const calls = toolCallsOf(message.tool_calls);
  if (text || refusal || calls.length === 0) {
    const content: ResponsesOutputContent[] = [];
    if (text || !refusal) content.push(outputText(text));
    if (refusal) content.push({ type: "refusal", refusal });
    output.push({ type: "message", id: ids("msg"), status: end.status === "completed" ? "completed" : "incomplete", role: "assistant", content });
  }
  for (const call of calls) {
    output.push({ type: "function_call", id: ids("fc"), call_id: call.id, name: call.function.name, arguments: call.function.arguments, status: "completed" });
  }
  return finishedResponse(shell, output, end, c.usage ? responsesUsageOf(c.usage) : undefined, completedAt);
}

export interface ResponseEnd {
  status: "completed" | "incomplete";
  incomplete_details: { reason: "max_output_tokens" | "content_filter" } | null;
}

/** finish_reason → status: a cut answer is "incomplete", saying why. */
export function endOf(finishReason: string | null | undefined): ResponseEnd {
  if (finishReason === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finishReason === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

export function finishedResponse(
  shell: ResponsesResponse,
  output: ResponsesOutputItem[],
  end: ResponseEnd,
  usage: ResponsesUsage | undefined,
  completedAt: number = nowSeconds(),
): ResponsesResponse {
  const done: ResponsesResponse = {
    ...shell,
    status: end.status,
    completed_at: end.status === "completed" ? completedAt : null,
    incomplete_details: end.incomplete_details,
    output,
  };
  if (usage) done.usage = usage;
  return done;
}

export function outputText(text: string): ResponsesOutputContent {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/**
 * Chat usage → Responses usage. prompt/completion are the same counts under other names; the
 * reasoning count is the upstream's when it reports one (OpenAI reasoning models), else 0.
 */
export function responsesUsageOf(u: Usage): ResponsesUsage {
  const prompt = isRecord(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const completion = isRecord(u.completion_tokens_details) ? u.completion_tokens_details : {};
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: countOf(prompt.cached_tokens), cache_write_tokens: countOf(prompt.cache_write_tokens) },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: countOf(completion.reasoning_tokens) },
    total_tokens: u.total_tokens,
  };
}

function countOf(v: unknown): number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : 0;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError("invalid_request", message, { param });
}

function requireString(v: unknown, at: string): string {
  if (typeof v !== "string") throw invalid(at, `${at} must be a string.`);
  return v;
}
