import { randomUUID } from "node:crypto";
import type { ChatCompletionChunk, MessagesStreamEvent as MessagesEvent, MessagesUsage, Usage } from "@gw/contracts";
import type { ChatStreamEvent, MessagesStreamEvent, StreamFailure } from "../providers/types";
import { chatUsageOf, finishReasonOf, messagesUsageOf, stopReasonOf } from "./common";

/**
 * Streams, translated event by event in both directions (rules in STREAMS.md beside this file).
 * Both functions are pure: they read the source, keep a little state and yield; nothing else.
 */

const ENDED_EARLY = "The model provider ended the stream early";

// ---------------------------------------------------------------- Anthropic events → OpenAI chunks

export interface MessagesToChatOptions {
  publicModel: string;
  /** The caller's `stream_options.include_usage`: adds `usage: null` to every chunk and a last usage chunk. */
  includeUsage: boolean;
  id?: string;
  created?: number;
}

/** The fields of Anthropic stream events we read; the source is loosely typed, so each is checked. */
interface AnthropicEvent {
  type: string;
  index?: unknown;
  message?: { usage?: Partial<MessagesUsage> | null } | null;
  content_block?: { type?: unknown; id?: unknown; name?: unknown; input?: unknown; text?: unknown } | null;
  delta?: { type?: unknown; text?: unknown; partial_json?: unknown; stop_reason?: unknown } | null;
  usage?: Record<string, unknown> | null;
  error?: { type?: unknown; message?: unknown } | null;
}

interface ToolBlock {
  k: number;
  input: unknown;
  sentArguments: boolean;
}

export async function* messagesStreamToChat(events: AsyncIterable<MessagesStreamEvent>, opts: MessagesToChatOptions): AsyncGenerator<ChatStreamEvent> {
  const id = opts.id ?? `chatcmpl-${randomUUID().replaceAll("-", "")}`;
  const created = opts.created ?? Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): ChatStreamEvent => ({
    type: "chunk",
    chunk: {
      id,
      object: "chat.completion.chunk",
      created,
      model: opts.publicModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(opts.includeUsage ? { usage: null } : {}),
    },
  });

  let started = false;
  let finished = false;
  let usage: MessagesUsage = { input_tokens: 0, output_tokens: 0 };
  let usageFinal = false; // message_delta carries the upstream's own final count
  let tools = 0;
  const toolBlocks = new Map<number, ToolBlock>();

  for await (const item of events) {
    if (item.type === "error") {
      if (usageFinal) yield { type: "usage", usage: chatUsageOf(usage) };
      yield { type: "error", error: chatFailureOf(item.error) };
      return;
    }
    const event = item.event as AnthropicEvent;
    if (event.type === "error") {
      if (usageFinal) yield { type: "usage", usage: chatUsageOf(usage) };
      yield { type: "error", error: chatFailureOf(anthropicFailureOf(event)) };
      return;
    }
    if (event.type === "ping") continue;
    if (!started && isContentEvent(event.type)) {
      // A (duplicate) message_start after the first one is ignored; content before any still gets a role.
      started = true;
      if (event.type === "message_start") usage = mergeUsage(usage, event.message?.usage);
      yield chunk({ role: "assistant", content: "" });
      if (event.type === "message_start") continue;
    }
    switch (event.type) {
      case "content_block_start": {
        const block = event.content_block;
        if (block?.type === "tool_use" && typeof event.index === "number") {
          const k = tools++;
          toolBlocks.set(event.index, { k, input: block.input, sentArguments: false });
          yield chunk({
            tool_calls: [{ index: k, id: String(block.id ?? ""), type: "function", function: { name: String(block.name ?? ""), arguments: "" } }],
          });
        } else if (block?.type === "text" && typeof block.text === "string" && block.text !== "") {
          yield chunk({ content: block.text });
        }
        break; // thinking, redacted_thinking and server-tool blocks have no chat equivalent
      }
      case "content_block_delta": {
        const delta = event.delta;
        if (delta?.type === "text_delta" && typeof delta.text === "string" && delta.text !== "") {
          yield chunk({ content: delta.text });
        } else if (delta?.type === "input_json_delta" && typeof delta.partial_json === "string" && delta.partial_json !== "") {
          const tool = typeof event.index === "number" ? toolBlocks.get(event.index) : undefined;
          if (!tool) break; // a server tool's input: not the caller's to run
          tool.sentArguments = true;
          yield chunk({ tool_calls: [{ index: tool.k, function: { arguments: delta.partial_json } }] });
        }
        break; // thinking, signature and citations deltas are dropped
      }
      case "content_block_stop": {
        // A tool without parameters streams no JSON at all; chat clients parse `arguments`, and "" is not JSON.
        const tool = typeof event.index === "number" ? toolBlocks.get(event.index) : undefined;
        if (tool && !tool.sentArguments) {
          tool.sentArguments = true;
          yield chunk({ tool_calls: [{ index: tool.k, function: { arguments: JSON.stringify(isObject(tool.input) ? tool.input : {}) } }] });
        }
        break;
      }
      case "message_delta": {
        usage = mergeUsage(usage, event.usage);
        usageFinal = true;
        if (!finished) {
          finished = true;
          const stopReason = typeof event.delta?.stop_reason === "string" ? event.delta.stop_reason : null;
          yield chunk({}, finishReasonOf(stopReason) ?? "stop");
        }
        break;
      }
      case "message_stop": {
        if (!finished) yield chunk({}, "stop");
        const total = chatUsageOf(usage);
        yield { type: "usage", usage: total };
        if (opts.includeUsage) {
          const last: ChatCompletionChunk = { id, object: "chat.completion.chunk", created, model: opts.publicModel, choices: [], usage: total };
          yield { type: "chunk", chunk: last };
        }
        return;
      }
      default:
        break; // new event types may appear; clients must ignore what they do not know
    }
  }
  if (usageFinal) yield { type: "usage", usage: chatUsageOf(usage) };
  yield { type: "error", error: { message: ENDED_EARLY, type: "server_error", code: "upstream_error" } };
}

function isContentEvent(type: string): boolean {
  return ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"].includes(type);
}

/** message_delta's counts are cumulative, so each number it carries replaces the one before. */
function mergeUsage(base: MessagesUsage, next: Record<string, unknown> | null | undefined): MessagesUsage {
  const merged: MessagesUsage = { ...base };
  for (const key of ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const) {
    const value = next?.[key];
    if (typeof value === "number") merged[key] = value;
  }
  return merged;
}

function anthropicFailureOf(event: AnthropicEvent): StreamFailure {
  const inner = event.error ?? {};
  return {
    message: typeof inner.message === "string" ? inner.message : "The model provider failed mid-stream",
    type: typeof inner.type === "string" ? inner.type : "api_error",
    code: null,
  };
}

/**
 * A failure in OpenAI's vocabulary: request and rate-limit problems keep their kind, everything
 * else is a server_error; the original type stays visible as the code (e.g. `overloaded_error`).
 */
function chatFailureOf(failure: StreamFailure): StreamFailure {
  const kept: Record<string, string> = { invalid_request_error: "invalid_request_error", rate_limit_error: "rate_limit_error" };
  return { message: failure.message, type: kept[failure.type] ?? "server_error", code: failure.code ?? failure.type };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------- OpenAI chunks → Anthropic events

export interface ChatToMessagesOptions {
  publicModel: string;
  id?: string;
}

interface ToolCallFragment {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown } | null;
}

/** One tool call of the source; `pending` holds its argument fragments until its block may open. */
interface ToolCall {
  id: string | undefined;
  name: string;
  args: string;
  /** Whether `args` parsed, and at which length that was checked (interleaved calls re-ask often). */
  complete: { length: number; value: boolean };
  pending: string[];
  state: "pending" | "open" | "closed";
}

type Open = { kind: "text"; index: number } | { kind: "tool"; index: number; call: ToolCall };

/**
 * Content blocks are contiguous in Anthropic's format and interleaved tool calls are possible in
 * OpenAI's (some compatible servers do it), so one call streams live while later ones wait: the open
 * call closes once its arguments parse as complete JSON and another call is waiting, or when text,
 * the finish chunk or the end of the source comes. OpenAI's own sequential calls thus all stream live.
 */
class BlockWriter {
  readonly out: MessagesEvent[] = [];
  private open: Open | undefined;
  private next = 0;
  private readonly waiting: ToolCall[] = [];
  private readonly byIndex = new Map<number, ToolCall>();

  text(text: string): void {
    if (text === "") return;
    this.finishTools();
    if (this.open?.kind !== "text") {
      this.close();
      this.open = { kind: "text", index: this.next++ };
      this.out.push({ type: "content_block_start", index: this.open.index, content_block: { type: "text", text: "" } });
    }
    this.out.push({ type: "content_block_delta", index: this.open.index, delta: { type: "text_delta", text } });
  }

  toolFragment(fragment: ToolCallFragment, position: number): void {
    const index = typeof fragment.index === "number" ? fragment.index : position;
    const id = typeof fragment.id === "string" && fragment.id !== "" ? fragment.id : undefined;
    let call = this.byIndex.get(index);
    // A new id on a known index is a new call (servers that leave out `index` send every call as 0).
    if (!call || (id !== undefined && call.id !== undefined && id !== call.id)) {
      call = { id, name: "", args: "", complete: { length: 0, value: false }, pending: [], state: "pending" };
      this.byIndex.set(index, call);
      this.waiting.push(call);
    }
    // Both are read until the block starts; OpenAI sends them with the first fragment.
    if (call.state === "pending") {
      call.id ??= id;
      const name = fragment.function?.name;
      if (typeof name === "string" && call.name === "") call.name = name;
    }
    const raw = fragment.function?.arguments;
    const args = typeof raw === "string" ? raw : raw !== undefined && raw !== null ? JSON.stringify(raw) : "";
    if (args !== "" && call.state !== "closed") {
      call.args += args;
      if (this.open?.kind === "tool" && this.open.call === call) this.out.push(jsonDelta(this.open.index, args));
      else call.pending.push(args);
    }
    this.advance();
  }

  /** Closes every block, writing out the calls still waiting, each contiguously, in arrival order. */
  closeAll(): void {
    this.finishTools();
    this.close();
  }

  private advance(): void {
    for (;;) {
      const next = this.waiting[0];
      if (!next || next.name === "") return; // a block cannot start without its tool's name
      if (this.open?.kind === "tool" && !isComplete(this.open.call)) return;
      this.close();
      this.waiting.shift();
      this.start(next);
    }
  }

  private finishTools(): void {
    while (this.open?.kind === "tool" || this.waiting.length > 0) {
      this.close();
      const call = this.waiting.shift();
      if (call) this.start(call);
    }
  }

  private start(call: ToolCall): void {
    const index = this.next++;
    call.state = "open";
    this.open = { kind: "tool", index, call };
    this.out.push({
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: call.id ?? `call_${randomUUID().replaceAll("-", "")}`, name: call.name, input: {} },
    });
    for (const args of call.pending.splice(0)) this.out.push(jsonDelta(index, args));
  }

  private close(): void {
    if (!this.open) return;
    if (this.open.kind === "tool") this.open.call.state = "closed";
    this.out.push({ type: "content_block_stop", index: this.open.index });
    this.open = undefined;
  }
}

function jsonDelta(index: number, partial: string): MessagesEvent {
  return { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: partial } };
}

/** Arguments that parse are finished: nothing can be appended to a JSON object and keep it valid. */
function isComplete(call: ToolCall): boolean {
  if (call.complete.length !== call.args.length) {
    call.complete = { length: call.args.length, value: parses(call.args) };
  }
  return call.complete.value;
}

function parses(text: string): boolean {
  if (text.trim() === "") return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

interface ChatDelta {
  content?: unknown;
  refusal?: unknown;
  tool_calls?: unknown;
}

export async function* chatStreamToMessages(events: AsyncIterable<ChatStreamEvent>, opts: ChatToMessagesOptions): AsyncGenerator<MessagesStreamEvent> {
  const blocks = new BlockWriter();
  let started = false;
  let finishReason: string | undefined;
  let usage: Usage | undefined;

  for await (const item of events) {
    if (item.type === "error") {
      yield { type: "event", event: { type: "error", error: { type: anthropicErrorTypeOf(item.error), message: item.error.message } } };
      return;
    }
    if (item.type === "usage") {
      usage = item.usage;
      continue;
    }
    const { chunk } = item;
    if (chunk.usage) usage = chunk.usage;
    if (!started) {
      started = true;
      yield { type: "event", event: messageStart(opts) };
    }
    const choice = chunk.choices.find((c) => c.index === 0);
    if (!choice) continue; // the usage chunk (`choices: []`), or a choice other than the first
    const delta = choice.delta as ChatDelta;
    if (typeof delta.content === "string") blocks.text(delta.content);
    if (typeof delta.refusal === "string") blocks.text(delta.refusal);
    if (Array.isArray(delta.tool_calls)) {
      delta.tool_calls.forEach((fragment: unknown, position) => {
        if (isObject(fragment)) blocks.toolFragment(fragment as ToolCallFragment, position);
      });
    }
    if (typeof choice.finish_reason === "string" && finishReason === undefined) {
      finishReason = choice.finish_reason;
      blocks.closeAll();
    }
    for (const event of blocks.out.splice(0)) yield { type: "event", event };
  }
  if (finishReason === undefined) {
    yield { type: "event", event: { type: "error", error: { type: "api_error", message: ENDED_EARLY } } };
    return;
  }
  // Held until the source ended: OpenAI sends the usage chunk after the finish chunk.
  blocks.closeAll();
  for (const event of blocks.out.splice(0)) yield { type: "event", event };
  yield {
    type: "event",
    event: {
      type: "message_delta",
      delta: { stop_reason: stopReasonOf(finishReason), stop_sequence: null },
      usage: usage ? messagesUsageOf(usage) : { output_tokens: 0 },
    },
  };
  yield { type: "event", event: { type: "message_stop" } };
}

function messageStart(opts: ChatToMessagesOptions): MessagesEvent {
  return {
    type: "message_start",
    message: {
      id: opts.id ?? `msg_${randomUUID().replaceAll("-", "")}`,
      type: "message",
      role: "assistant",
      model: opts.publicModel,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    },
  };
}

function anthropicErrorTypeOf(failure: StreamFailure): string {
  const said = `${failure.type} ${failure.code ?? ""}`;
  return /overloaded/i.test(said) || failure.code === "upstream_unavailable" ? "overloaded_error" : "api_error";
}
