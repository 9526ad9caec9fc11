import type {
  ChatCompletionRequest,
  ChatMessage,
  ChatTool,
  MessagesContentBlock,
  MessagesMessage,
  MessagesRequest,
  MessagesTool,
  MessagesToolChoice,
} from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { isRecord } from "./common";

/**
 * Request translation between OpenAI Chat Completions and Anthropic Messages, both ways. Pure
 * functions over already-validated bodies; every rule (and every parameter dropped or refused) is
 * in README.md beside this file. A parameter that would change the answer and has no equivalent is
 * a 400 naming it, never silently dropped.
 */

type Block = MessagesContentBlock;
type Part = { type: string; [key: string]: unknown };
type Turn = { role: "user" | "assistant"; content: Block[] };

/** Anthropic requires max_tokens; OpenAI callers often leave it out. */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Anthropic 400s on history with tool_use/tool_result blocks when `tools` is absent; this stands in,
 * with tool_choice none, so the model still cannot call anything (LiteLLM does the same).
 */
export const PLACEHOLDER_TOOL: MessagesTool = {
  name: "no_tools_available",
  description: "Placeholder: no tools are available in this conversation. Never call it.",
  input_schema: { type: "object", properties: {} },
};

/** Separator when several text blocks of one input message become one OpenAI string. */
const INPUT_TEXT_JOIN = "\n\n";

// ---------------------------------------------------------------------------------------------
// OpenAI Chat Completions → Anthropic Messages
// ---------------------------------------------------------------------------------------------

export function chatRequestToMessages(req: ChatCompletionRequest, upstreamModel: string): MessagesRequest {
  rejectUnsupported(req, chatRefusals);
  const system: Block[] = [];
  const turns: Turn[] = [];
  req.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (m.role === "system" || m.role === "developer") system.push(...withMessageCache(m, systemBlocks(m, at)));
    else if (m.role === "user") addTurn(turns, "user", withMessageCache(m, partsToBlocks(m.content, `${at}.content`)));
    else if (m.role === "tool") addTurn(turns, "user", withMessageCache(m, [toolResultBlock(m, at)]));
    else if (m.role === "assistant") addTurn(turns, "assistant", withMessageCache(m, assistantBlocks(m, at)));
    else throw invalid(`${at}.role`, `Messages with role "${m.role}" are not supported for this model.`);
  });
  if (turns.length === 0) throw invalid("messages", "At least one non-system message is required.");
  // Anthropic wants a turn's tool_result blocks before anything else in it.
  for (const t of turns) {
    if (t.role === "user") t.content = [...t.content.filter(isToolResult), ...t.content.filter((b) => !isToolResult(b))];
  }

  const out: MessagesRequest = {
    model: upstreamModel,
    max_tokens: req.max_completion_tokens ?? req.max_tokens ?? DEFAULT_MAX_TOKENS,
    messages: turns,
  };
  if (system.length > 0) out.system = system;
  const stop = typeof req.stop === "string" ? [req.stop] : (req.stop ?? []);
  if (stop.length > 0) out.stop_sequences = stop;
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.stream != null) out.stream = req.stream;
  const userId = req.user ?? stringOf(req.safety_identifier);
  if (userId) out.metadata = { user_id: userId };
  if (req.tools && req.tools.length > 0) {
    out.tools = req.tools.map(toolToMessages);
    const choice = toolChoiceToMessages(req);
    if (choice) out.tool_choice = choice;
  } else {
    if (req.tool_choice === "required" || (req.tool_choice != null && typeof req.tool_choice === "object")) {
      throw invalid("tool_choice", "tool_choice requires tools.");
    }
    if (turns.some((t) => t.content.some((b) => b.type === "tool_use" || b.type === "tool_result"))) {
      out.tools = [{ ...PLACEHOLDER_TOOL }];
      out.tool_choice = { type: "none" };
    }
  }
  return out;
}

type Refusal<R> = { param: string; refuse: (req: R) => boolean; message: string };

const notYet = "is not supported for this model yet";
const nonZero = (v: unknown): boolean => typeof v === "number" && v !== 0;

/** Parameters that change the answer and have no Anthropic equivalent. */
const chatRefusals: Refusal<ChatCompletionRequest>[] = [
  { param: "n", refuse: (r) => (r.n ?? 1) > 1, message: "n > 1 is not supported for this model; ask for one choice per request." },
  { param: "logprobs", refuse: (r) => r.logprobs === true, message: `logprobs ${notYet}.` },
  { param: "top_logprobs", refuse: (r) => typeof r.top_logprobs === "number" && r.top_logprobs > 0, message: `top_logprobs ${notYet}.` },
  {
    param: "response_format",
    refuse: (r) => r.response_format != null && r.response_format.type !== "text",
    message: `response_format json_object / json_schema ${notYet}; describe the format in the prompt or use a tool.`,
  },
  { param: "presence_penalty", refuse: (r) => nonZero(r.presence_penalty), message: `A non-zero presence_penalty ${notYet}.` },
  { param: "frequency_penalty", refuse: (r) => nonZero(r.frequency_penalty), message: `A non-zero frequency_penalty ${notYet}.` },
  {
    param: "logit_bias",
    refuse: (r) => isRecord(r.logit_bias) && Object.keys(r.logit_bias).length > 0,
    message: `logit_bias ${notYet}.`,
  },
  { param: "temperature", refuse: (r) => (r.temperature ?? 0) > 1, message: "temperature must be between 0 and 1 for this model." },
  {
    param: "functions",
    refuse: (r) => r.functions != null && !(Array.isArray(r.functions) && r.functions.length === 0),
    message: "functions is deprecated and not supported for this model; use tools.",
  },
  {
    param: "function_call",
    refuse: (r) => r.function_call != null,
    message: "function_call is deprecated and not supported for this model; use tool_choice.",
  },
  { param: "audio", refuse: (r) => r.audio != null, message: `Audio output ${notYet}.` },
  {
    param: "modalities",
    refuse: (r) => Array.isArray(r.modalities) && r.modalities.some((m: unknown) => m !== "text"),
    message: `Output modalities other than text are not supported for this model.`,
  },
  {
    param: "reasoning_effort",
    refuse: (r) => r.reasoning_effort != null && r.reasoning_effort !== "none",
    message: `reasoning_effort ${notYet}.`,
  },
  { param: "verbosity", refuse: (r) => r.verbosity != null && r.verbosity !== "medium", message: `verbosity ${notYet}.` },
  { param: "web_search_options", refuse: (r) => r.web_search_options != null, message: `web_search_options ${notYet}.` },
];

function systemBlocks(m: ChatMessage, at: string): Block[] {
  const j = Array.isArray(m.content) ? m.content.findIndex((part) => part.type !== "text") : -1;
  if (j >= 0) throw invalid(`${at}.content[${j}].type`, "System messages may only contain text.");
  return partsToBlocks(m.content, `${at}.content`);
}

function assistantBlocks(m: ChatMessage, at: string): Block[] {
  if (m.function_call != null) {
    throw invalid(`${at}.function_call`, "function_call is deprecated and not supported for this model; use tool_calls.");
  }
  if (m.audio != null) throw invalid(`${at}.audio`, `Assistant audio ${notYet}.`);
  const blocks: Block[] = [];
  if (typeof m.content === "string") {
    if (m.content) blocks.push({ type: "text", text: m.content });
  } else if (Array.isArray(m.content)) {
    m.content.forEach((part, j) => {
      const where = `${at}.content[${j}]`;
      // A refusal in history is what the assistant said; Anthropic has no refusal block.
      if (part.type === "refusal") pushText(blocks, requireString(part.refusal, `${where}.refusal`), part);
      else if (part.type === "text") pushText(blocks, requireString(part.text, `${where}.text`), part);
      else throw invalid(`${where}.type`, `Assistant content parts of type "${part.type}" are not supported.`);
    });
  } else if (typeof m.refusal === "string" && m.refusal) {
    blocks.push({ type: "text", text: m.refusal });
  }
  for (const call of m.tool_calls ?? []) {
    blocks.push({ type: "tool_use", id: toolUseId(call.id), name: call.function.name, input: toolInputOf(call.function.arguments) });
  }
  return blocks;
}

function toolResultBlock(m: ChatMessage, at: string): Block {
  const block: Block = { type: "tool_result", tool_use_id: toolUseId(m.tool_call_id ?? "") };
  if (typeof m.content === "string") {
    if (m.content) block.content = m.content;
  } else {
    const blocks = partsToBlocks(m.content, `${at}.content`);
    if (blocks.length > 0) block.content = blocks;
  }
  return block;
}

/** User (and system, tool) content: text and image_url parts. Empty text is dropped (Anthropic 400s). */
function partsToBlocks(content: ChatMessage["content"], at: string): Block[] {
  if (content == null) return [];
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  const blocks: Block[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (part.type === "text") pushText(blocks, requireString(part.text, `${where}.text`), part);
    else if (part.type === "image_url") blocks.push(withPartCache(imageBlock(part, where), part));
    else throw invalid(`${where}.type`, `Content parts of type "${part.type}" are not supported for this model yet.`);
  });
  return blocks;
}

function imageBlock(part: Part, at: string): Block {
  const url = isRecord(part.image_url) ? part.image_url.url : undefined;
  if (typeof url !== "string") throw invalid(`${at}.image_url.url`, "image_url.url must be a string.");
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) {
    const [, mediaType = "", payload = ""] = data;
    const source = { type: "base64", media_type: mediaType, data: payload };
    if (mediaType.startsWith("image/")) return { type: "image", source };
    if (mediaType === "application/pdf") return { type: "document", source };
    throw invalid(`${at}.image_url.url`, `Data URIs of type ${mediaType} are not supported for this model.`);
  }
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  throw invalid(`${at}.image_url.url`, "image_url.url must be an http(s) URL or a base64 data URI.");
}

function toolToMessages(tool: ChatTool): MessagesTool {
  const params = tool.function.parameters;
  const out: MessagesTool = {
    name: tool.function.name,
    input_schema: params && Object.keys(params).length > 0 ? params : { type: "object", properties: {} },
  };
  if (tool.function.description !== undefined) out.description = tool.function.description;
  if (tool.cache_control != null) out.cache_control = tool.cache_control;
  return out;
}

function toolChoiceToMessages(req: ChatCompletionRequest): MessagesToolChoice | undefined {
  const c = req.tool_choice;
  let choice: MessagesToolChoice | undefined;
  if (c === "auto") choice = { type: "auto" };
  else if (c === "required") choice = { type: "any" };
  else if (c === "none") choice = { type: "none" };
  else if (c != null) choice = { type: "tool", name: c.function.name };
  if (req.parallel_tool_calls === false && choice?.type !== "none") {
    choice = { ...(choice ?? { type: "auto" }), disable_parallel_tool_use: true };
  }
  return choice;
}

/** Consecutive messages of one Anthropic role become one turn; empty messages vanish. */
function addTurn(turns: Turn[], role: Turn["role"], content: Block[]): void {
  if (content.length === 0) return;
  const last = turns.at(-1);
  if (last?.role === role) last.content.push(...content);
  else turns.push({ role, content });
}

function pushText(blocks: Block[], text: string, part: Part): void {
  if (text) blocks.push(withPartCache({ type: "text", text }, part));
}

function withPartCache(block: Block, part: Part): Block {
  return part.cache_control != null ? { ...block, cache_control: part.cache_control } : block;
}

/** A message-level cache_control (LiteLLM's extension) marks the message's last block. */
function withMessageCache(m: ChatMessage, blocks: Block[]): Block[] {
  const last = blocks.at(-1);
  if (m.cache_control == null || !last) return blocks;
  return [...blocks.slice(0, -1), { ...last, cache_control: m.cache_control }];
}

/** Anthropic tool ids must match ^[a-zA-Z0-9_-]+$; the same rewrite on both ends keeps pairs matched. */
function toolUseId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, "_") || "call";
}

/** OpenAI tool arguments (a JSON string) → Anthropic tool input (an object); {} when not an object. */
export function toolInputOf(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

const isToolResult = (b: Block): boolean => b.type === "tool_result";

// ---------------------------------------------------------------------------------------------
// Anthropic Messages → OpenAI Chat Completions
// ---------------------------------------------------------------------------------------------

export function messagesRequestToChat(req: MessagesRequest, upstreamModel: string): ChatCompletionRequest {
  rejectUnsupported(req, messagesRefusals);
  const messages: ChatMessage[] = [];
  if (req.system !== undefined) {
    const text = textOnly(req.system, "system", INPUT_TEXT_JOIN);
    if (text) messages.push({ role: "system", content: text });
  }
  for (const [i, m] of req.messages.entries()) messages.push(...messageToChat(m, `messages[${i}]`));
  const lastIndex = req.messages.length - 1;
  if (req.messages[lastIndex]?.role === "assistant") {
    throw invalid(`messages[${lastIndex}].role`, "A final assistant message (prefill) is not supported for this model.");
  }

  const out: ChatCompletionRequest = { model: upstreamModel, messages, max_tokens: req.max_tokens };
  if (req.stop_sequences && req.stop_sequences.length > 0) {
    if (req.stop_sequences.length > 4) throw invalid("stop_sequences", "This model accepts at most 4 stop_sequences.");
    out.stop = req.stop_sequences;
  }
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  } else if (req.stream === false) {
    out.stream = false;
  }
  if (req.metadata?.user_id) out.user = req.metadata.user_id;
  if (req.tools && req.tools.length > 0) {
    out.tools = req.tools.map(toolToChat);
    const choice = req.tool_choice;
    if (choice) {
      out.tool_choice = toolChoiceToChat(choice);
      if (choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
    }
  } else if (req.tool_choice?.type === "any" || req.tool_choice?.type === "tool") {
    throw invalid("tool_choice", "tool_choice requires tools.");
  }
  return out;
}

function toolChoiceToChat(choice: MessagesToolChoice): NonNullable<ChatCompletionRequest["tool_choice"]> {
  if (choice.type === "any") return "required";
  if (choice.type !== "tool") return choice.type;
  if (!choice.name) throw invalid("tool_choice.name", "tool_choice of type tool needs a name.");
  return { type: "function", function: { name: choice.name } };
}

const messagesRefusals: Refusal<MessagesRequest>[] = [
  { param: "top_k", refuse: (r) => r.top_k != null, message: "top_k is not supported for this model." },
  {
    param: "thinking",
    refuse: (r) => r.thinking != null && !(isRecord(r.thinking) && r.thinking.type === "disabled"),
    message: `Extended thinking ${notYet}.`,
  },
  { param: "output_format", refuse: (r) => r.output_format != null, message: `output_format ${notYet}.` },
  {
    param: "output_config",
    refuse: (r) => isRecord(r.output_config) && Object.values(r.output_config).some((v) => v != null),
    message: `output_config ${notYet}.`,
  },
  { param: "mcp_servers", refuse: (r) => Array.isArray(r.mcp_servers) && r.mcp_servers.length > 0, message: `mcp_servers ${notYet}.` },
  { param: "container", refuse: (r) => r.container != null, message: `container ${notYet}.` },
  { param: "context_management", refuse: (r) => r.context_management != null, message: `context_management ${notYet}.` },
];

function messageToChat(m: MessagesMessage, at: string): ChatMessage[] {
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  if (m.role === "system") return [{ role: "system", content: textOnly(m.content, `${at}.content`, INPUT_TEXT_JOIN) }];
  if (m.role === "assistant") return [assistantToChat(m.content, at)];

  const toolMessages: ChatMessage[] = [];
  const parts: Part[] = [];
  m.content.forEach((block, j) => {
    const where = `${at}.content[${j}]`;
    if (block.type === "tool_result") toolMessages.push(toolResultToChat(block, where));
    else if (block.type === "text") parts.push({ type: "text", text: requireString(block.text, `${where}.text`) });
    else if (block.type === "image") parts.push(imagePart(block, where));
    else throw unknownBlock(block, where);
  });
  if (parts.length === 0) return toolMessages;
  const content = parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join(INPUT_TEXT_JOIN) : parts;
  return [...toolMessages, { role: "user", content }];
}

function assistantToChat(blocks: Block[], at: string): ChatMessage {
  const texts: string[] = [];
  const calls: NonNullable<ChatMessage["tool_calls"]> = [];
  blocks.forEach((block, j) => {
    const where = `${at}.content[${j}]`;
    if (block.type === "text") texts.push(requireString(block.text, `${where}.text`));
    else if (block.type === "tool_use") {
      const id = requireString(block.id, `${where}.id`);
      const name = requireString(block.name, `${where}.name`);
      calls.push({ id, type: "function", function: { name, arguments: JSON.stringify(block.input ?? {}) } });
    } else throw unknownBlock(block, where);
  });
  // Assistant text blocks are pieces of one answer (split at citations), so they join with nothing.
  const message: ChatMessage = { role: "assistant", content: texts.length > 0 ? texts.join("") : calls.length > 0 ? null : "" };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function toolResultToChat(block: Block, at: string): ChatMessage {
  const id = requireString(block.tool_use_id, `${at}.tool_use_id`);
  const c = block.content;
  if (c != null && typeof c !== "string" && !isBlockList(c)) {
    throw invalid(`${at}.content`, "tool_result content must be a string or blocks.");
  }
  const content = c == null ? "" : textOnly(c, `${at}.content`, INPUT_TEXT_JOIN);
  return { role: "tool", tool_call_id: id, content };
}

function imagePart(block: Block, at: string): Part {
  const source = isRecord(block.source) ? block.source : {};
  if (source.type === "base64" && typeof source.media_type === "string" && typeof source.data === "string") {
    return { type: "image_url", image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === "url" && typeof source.url === "string") return { type: "image_url", image_url: { url: source.url } };
  throw invalid(`${at}.source.type`, `Image sources of type "${String(source.type)}" are not supported for this model.`);
}

function toolToChat(tool: MessagesTool, i: number): ChatTool {
  if (tool.type !== undefined && tool.type !== "custom") {
    throw invalid(`tools[${i}].type`, `Server tools ("${tool.type}") are not supported for this model.`);
  }
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) {
    throw invalid(`tools[${i}].name`, "Tool names for this model are 1-64 letters, digits, _ or -.");
  }
  const fn: ChatTool["function"] = { name: tool.name, parameters: tool.input_schema ?? { type: "object", properties: {} } };
  if (tool.description !== undefined) fn.description = tool.description;
  return { type: "function", function: fn };
}

/** Text of a system prompt or tool result given as blocks; anything but text is a 400 at its path. */
function textOnly(content: string | Block[], at: string, join: string): string {
  if (typeof content === "string") return content;
  return content
    .map((block, j) => {
      if (block.type !== "text") throw unknownBlock(block, `${at}[${j}]`);
      return requireString(block.text, `${at}[${j}].text`);
    })
    .join(join);
}

function unknownBlock(block: Block, at: string): GatewayError {
  return invalid(`${at}.type`, `Content blocks of type "${block.type}" are not supported here for this model.`);
}

// ---------------------------------------------------------------------------------------------

function rejectUnsupported<R>(req: R, refusals: Refusal<R>[]): void {
  for (const r of refusals) if (r.refuse(req)) throw invalid(r.param, r.message);
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError("invalid_request", message, { param });
}

function requireString(v: unknown, at: string): string {
  if (typeof v !== "string") throw invalid(at, `${at} must be a string.`);
  return v;
}

function stringOf(v: unknown): string | undefined {
  return typeof v === "string" && v ? v : undefined;
}

function isBlockList(v: unknown): v is Block[] {
  return Array.isArray(v) && v.every((b) => isRecord(b) && typeof b.type === "string");
}
