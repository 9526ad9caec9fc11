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
 * Messages API answers (provider-wire-formats.md §4.3/§4.4).
 *
 * Text is `Echo: <text of the last user turn>` (its text blocks and tool_result contents). Tool use
 * follows Anthropic's tool_choice: `none` → text only; `tool` → that tool; `any` → the first tool
 * (the first two unless `disable_parallel_tool_use`); `auto`/absent → a text block then the tool
 * call(s), except after a tool_result turn, where Claude answers in text. With `any`/`tool` there is
 * no text before the tool_use block, because the API prefills the turn to force the tool.
 */

type Block = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: unknown; json: string };

export interface MessagePlan {
  model: string;
  blocks: Block[];
  stopReason: "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";
  stopSequence: string | null;
  /** Only the tokens after the last cache breakpoint (or all of them when nothing was cached). */
  inputTokens: number;
  outputTokens: number;
  cache: PromptCacheUsage;
}

/** What the prompt cache did for one request (Anthropic: total input = input + read + written). */
export interface PromptCacheUsage {
  readTokens: number;
  write5mTokens: number;
  write1hTokens: number;
}

const NO_CACHE: PromptCacheUsage = { readTokens: 0, write5mTokens: 0, write1hTokens: 0 };

/** One block of the prompt, in the order Anthropic renders it: tools → system → messages. */
export interface PromptBlock {
  /** The block's content without its cache_control, so moving a breakpoint keeps the prefix. */
  key: string;
  tokens: number;
  /** TTL of the cache_control breakpoint on this block, if any. */
  breakpoint?: "5m" | "1h";
}

/** Text of a content value: a string, or blocks (text, and tool_result content, nested). */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (block.type === "text" && typeof block.text === "string") parts.push(block.text);
    if (block.type === "tool_result") parts.push(contentText(block.content));
  }
  return parts.filter(Boolean).join(" ");
}

function customTools(tools: unknown): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  // Server tools (web_search_…, code_execution_…) carry a versioned `type` and no input_schema.
  return tools.filter((t): t is JsonObject => isRecord(t) && typeof t.name === "string" && (t.type === undefined || t.type === "custom"));
}

function endsWithToolResult(message: JsonObject | undefined): boolean {
  return Array.isArray(message?.content) && message.content.some((b) => isRecord(b) && b.type === "tool_result");
}

function cacheTtl(control: unknown): "5m" | "1h" | undefined {
  if (!isRecord(control) || control.type !== "ephemeral") return undefined;
  return control.ttl === "1h" ? "1h" : "5m";
}

function blockTokens(block: unknown): number {
  if (typeof block === "string") return countTokens(block);
  if (!isRecord(block)) return 0;
  if (block.type === "text" && typeof block.text === "string") return countTokens(block.text);
  if (block.type === "tool_result") return countTokens(contentText(block.content));
  return 0;
}

/**
 * The prompt as a list of cacheable blocks. Text and tool results count their words; a tool
 * definition counts like JSON (it is input the model reads, and a breakpoint may sit on it).
 */
export function promptBlocks(body: JsonObject): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  const add = (where: string, block: unknown, tokens: number) => {
    const record = isRecord(block) ? block : undefined;
    const { cache_control: control, ...content } = record ?? {};
    const key = `${where}:${JSON.stringify(record ? content : block)}`;
    const ttl = cacheTtl(control);
    blocks.push(ttl ? { key, tokens, breakpoint: ttl } : { key, tokens });
  };
  for (const tool of Array.isArray(body.tools) ? body.tools : []) {
    const { cache_control: _, ...definition } = isRecord(tool) ? tool : {};
    add("tool", tool, jsonTokens(JSON.stringify(definition)));
  }
  for (const block of Array.isArray(body.system) ? body.system : typeof body.system === "string" ? [body.system] : []) {
    add("system", block, blockTokens(block));
  }
  for (const message of Array.isArray(body.messages) ? body.messages.filter(isRecord) : []) {
    const content = typeof message.content === "string" ? [message.content] : Array.isArray(message.content) ? message.content : [];
    for (const block of content) add(String(message.role), block, blockTokens(block));
  }
  // Automatic caching: a top-level cache_control puts the breakpoint on the last block.
  const automatic = cacheTtl(body.cache_control);
  const last = blocks.at(-1);
  if (automatic && last && !last.breakpoint) last.breakpoint = automatic;
  return blocks;
}

/** Explicit cache_control markers in a request (Anthropic allows at most 4). */
export function countCacheBreakpoints(body: JsonObject): number {
  const marked = (list: unknown) => (Array.isArray(list) ? list.filter((b) => isRecord(b) && isRecord(b.cache_control)).length : 0);
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  return marked(body.tools) + marked(body.system) + messages.reduce((n, m) => n + marked(m.content), 0);
}

/**
 * Anthropic's minimum cacheable prompt per model (prompt-caching docs: 4096 for Opus 4.5/4.6 and
 * Haiku 4.5, 2048 for the older Haikus, 1024 for Sonnet and the other Opus models).
 */
export function minCacheTokens(model: string): number {
  if (/^claude-(opus-4-[56]|haiku-4-5)/.test(model)) return 4096;
  if (model.includes("haiku")) return 2048;
  return 1024;
}

/** How far back from a breakpoint Anthropic looks for an earlier cached prefix, in blocks. */
const LOOKBACK_BLOCKS = 20;

export interface AnthropicPromptCache {
  /** Reads what earlier requests wrote and writes this request's breakpoints; returns the counts. */
  settle(model: string, blocks: readonly PromptBlock[]): PromptCacheUsage;
  clear(): void;
}

/**
 * Anthropic prompt caching without the clock (entries never expire; `clear` forgets them). A
 * breakpoint's prefix is cached once it reaches the model's minimum (`minTokens` overrides it).
 * A request reads the longest cached prefix found at a breakpoint or up to 19 blocks before it,
 * and writes the rest up to its last breakpoint, each stretch under the TTL of the breakpoint
 * that closes it.
 */
export function createAnthropicPromptCache(opts: { minTokens?: number } = {}): AnthropicPromptCache {
  const cached = new Set<string>();
  return {
    settle(model, blocks) {
      const marks = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
      const totals = cumulative(blocks.map((b) => b.tokens));
      const min = opts.minTokens ?? minCacheTokens(model);
      const lastMark = marks.at(-1);
      if (lastMark === undefined || totals[lastMark]! < min) return NO_CACHE;
      const hashes = prefixHashes(
        model,
        blocks.map((b) => b.key),
      );
      let read = 0;
      for (const mark of marks) {
        for (let i = mark; i >= Math.max(0, mark - LOOKBACK_BLOCKS + 1); i--) {
          if (!cached.has(hashes[i]!)) continue;
          rememberKey(cached, hashes[i]!);
          read = Math.max(read, totals[i]!);
          break;
        }
      }
      const usage = { ...NO_CACHE, readTokens: read };
      let covered = read;
      for (const mark of marks) {
        const total = totals[mark]!;
        if (total < min) continue;
        rememberKey(cached, hashes[mark]!);
        if (total <= covered) continue;
        if (blocks[mark]!.breakpoint === "1h") usage.write1hTokens += total - covered;
        else usage.write5mTokens += total - covered;
        covered = total;
      }
      return usage;
    },
    clear: () => cached.clear(),
  };
}

/** Plans the answer; with a prompt cache, the input usage is split the way Anthropic reports it. */
export function planMessage(body: JsonObject, promptCache?: AnthropicPromptCache): MessagePlan {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const text = lastUser ? contentText(lastUser.content) : "";
  const model = typeof body.model === "string" ? body.model : "";
  const prompt = promptBlocks(body);
  const cache = promptCache ? promptCache.settle(model, prompt) : NO_CACHE;
  const promptTokens = Math.max(
    1,
    prompt.reduce((n, b) => n + b.tokens, 0),
  );
  const inputTokens = promptTokens - cache.readTokens - cache.write5mTokens - cache.write1hTokens;
  const tools = customTools(body.tools);
  const choice = isRecord(body.tool_choice) ? body.tool_choice : { type: "auto" };
  const parallel = choice.disable_parallel_tool_use !== true;

  let called: JsonObject[] = [];
  if (tools.length > 0 && choice.type !== "none") {
    if (choice.type === "tool") {
      called = [tools.find((t) => t.name === choice.name) ?? { name: choice.name }];
    } else if (choice.type === "any" || !endsWithToolResult(messages.at(-1))) {
      called = tools.slice(0, parallel ? 2 : 1);
    }
  }
  if (called.length > 0) {
    const blocks: Block[] = [];
    if (choice.type !== "any" && choice.type !== "tool") blocks.push({ type: "text", text: `Echo: ${text}` });
    for (const tool of called) {
      const input = valueForSchema(tool.input_schema, text);
      blocks.push({ type: "tool_use", id: `toolu_01${randomId(22)}`, name: String(tool.name), input, json: JSON.stringify(input) });
    }
    return { model, blocks, stopReason: "tool_use", stopSequence: null, inputTokens, outputTokens: outputTokens(blocks), cache };
  }

  const stops = Array.isArray(body.stop_sequences) ? body.stop_sequences.filter((s): s is string => typeof s === "string") : [];
  const stopped = applyStop(`Echo: ${text}`, stops);
  const limited = limitTokens(stopped.text, typeof body.max_tokens === "number" ? body.max_tokens : undefined);
  const blocks: Block[] = [{ type: "text", text: limited.text }];
  const stopReason = limited.truncated ? "max_tokens" : stopped.stop !== null ? "stop_sequence" : "end_turn";
  const stopSequence = stopReason === "stop_sequence" ? stopped.stop : null;
  return { model, blocks, stopReason, stopSequence, inputTokens, outputTokens: outputTokens(blocks), cache };
}

function outputTokens(blocks: Block[]): number {
  return Math.max(
    1,
    blocks.reduce((n, b) => n + (b.type === "text" ? countTokens(b.text) : jsonTokens(b.json)), 0),
  );
}

/** The three input figures, as both message_start and message_delta carry them. */
function inputUsage(plan: MessagePlan): JsonObject {
  return {
    input_tokens: plan.inputTokens,
    cache_creation_input_tokens: plan.cache.write5mTokens + plan.cache.write1hTokens,
    cache_read_input_tokens: plan.cache.readTokens,
  };
}

function usage(plan: MessagePlan, outputTokensValue: number): JsonObject {
  return {
    ...inputUsage(plan),
    cache_creation: { ephemeral_5m_input_tokens: plan.cache.write5mTokens, ephemeral_1h_input_tokens: plan.cache.write1hTokens },
    output_tokens: outputTokensValue,
    server_tool_use: null,
    service_tier: "standard",
    inference_geo: "not_available",
  };
}

function blockBody(b: Block): JsonObject {
  return b.type === "text" ? { type: "text", text: b.text, citations: null } : { type: "tool_use", id: b.id, name: b.name, input: b.input };
}

export function message(plan: MessagePlan, id: string): JsonObject {
  return {
    id,
    type: "message",
    role: "assistant",
    model: plan.model,
    content: plan.blocks.map(blockBody),
    stop_reason: plan.stopReason,
    stop_sequence: plan.stopSequence,
    stop_details: null,
    container: null,
    usage: usage(plan, plan.outputTokens),
  };
}

const frame = (data: JsonObject) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

/** Named SSE events (`event:` before every `data:`; the SDK skips events without one). */
export function messageFrames(plan: MessagePlan, id: string): string[] {
  const frames: string[] = [];
  const start = message(plan, id);
  frames.push(
    frame({
      type: "message_start",
      message: { ...start, content: [], stop_reason: null, stop_sequence: null, usage: usage(plan, 1) },
    }),
  );
  plan.blocks.forEach((b, index) => {
    const contentBlock = b.type === "text" ? { type: "text", text: "" } : { type: "tool_use", id: b.id, name: b.name, input: {} };
    frames.push(frame({ type: "content_block_start", index, content_block: contentBlock }));
    if (index === 0) frames.push(frame({ type: "ping" })); // the API pings right after the first block opens
    const deltas =
      b.type === "text"
        ? pieces(b.text).map((t) => ({ type: "text_delta", text: t }))
        : ["", ...fragments(b.json)].map((p) => ({ type: "input_json_delta", partial_json: p }));
    for (const delta of deltas) frames.push(frame({ type: "content_block_delta", index, delta }));
    frames.push(frame({ type: "content_block_stop", index }));
  });
  frames.push(
    frame({
      type: "message_delta",
      delta: { stop_reason: plan.stopReason, stop_sequence: plan.stopSequence },
      // Cumulative counts for the whole message, as the API sends them.
      usage: { ...inputUsage(plan), output_tokens: plan.outputTokens },
    }),
  );
  frames.push(frame({ type: "message_stop" }));
  return frames;
}
