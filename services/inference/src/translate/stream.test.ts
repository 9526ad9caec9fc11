import { readFileSync } from "node:fs";
import type { ChatCompletionChunk, MessagesStreamEvent as MessagesEvent } from "@gw/contracts";
import { describe, expect, it } from "vitest";
import type { ChatStreamEvent, MessagesStreamEvent } from "../providers/types";
import { chatStreamToMessages, messagesStreamToChat } from "./stream";

// ------------------------------------------------------------------------------------ helpers

function fixture(name: string): Record<string, unknown>[] {
  const text = readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function* from<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

/** Anthropic payloads as the adapter hands them on. */
function anthropic(payloads: Record<string, unknown>[]): MessagesStreamEvent[] {
  return payloads.map((event) => ({ type: "event", event: event as MessagesEvent }));
}

/**
 * OpenAI chunks as the OpenAI adapter hands them on: usage always as its own event; the chunks
 * themselves with usage (`showUsage`) or as if include_usage were off.
 */
function relayed(chunks: Record<string, unknown>[], showUsage: boolean): ChatStreamEvent[] {
  const out: ChatStreamEvent[] = [];
  for (const raw of chunks) {
    const chunk = raw as ChatCompletionChunk;
    const { usage, ...rest } = chunk;
    if (usage) out.push({ type: "usage", usage });
    if (showUsage) out.push({ type: "chunk", chunk });
    else if (!(usage && rest.choices.length === 0)) out.push({ type: "chunk", chunk: rest });
  }
  return out;
}

const toChat = { publicModel: "claude-public", id: "chatcmpl-test", created: 1_700_000_000 };
const toMessages = { publicModel: "gpt-public", id: "msg_test" };

/** An expected chat chunk (include_usage off), written field by field the way OpenAI orders them. */
function chunk(delta: Record<string, unknown>, finishReason: string | null = null): ChatStreamEvent {
  return {
    type: "chunk",
    chunk: {
      id: "chatcmpl-test",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "claude-public",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    },
  };
}

const ev = (event: Record<string, unknown>): MessagesStreamEvent => ({ type: "event", event: event as MessagesEvent });
const messageStart = ev({
  type: "message_start",
  message: {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: "gpt-public",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 0, output_tokens: 0 },
  },
});
const textStart = (index: number) => ev({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
const text = (index: number, t: string) => ev({ type: "content_block_delta", index, delta: { type: "text_delta", text: t } });
const toolStart = (index: number, id: string, name: string) =>
  ev({ type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } });
const json = (index: number, partial: string) => ev({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: partial } });
const stop = (index: number) => ev({ type: "content_block_stop", index });
const messageStop = ev({ type: "message_stop" });
const usage = (input: number, output: number, cacheRead = 0) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: cacheRead,
});
const messageDelta = (stopReason: string, u: Record<string, number>) =>
  ev({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: u });

// ------------------------------------------------------------------ Anthropic events → chat chunks

describe("messagesStreamToChat", () => {
  it("when the recorded tool stream is translated with include_usage, then the chunks are OpenAI's exact shape", async () => {
    const out = await collect(messagesStreamToChat(from(anthropic(fixture("anthropic-json-tool.chunks.txt"))), { ...toChat, includeUsage: true }));
    const head = '{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"claude-public","choices":';
    expect(out.map((e) => (e.type === "chunk" ? JSON.stringify(e.chunk) : e))).toEqual([
      `${head}[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
      `${head}[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_01KFbKqPYSuAKujiL6mTfzYA","type":"function","function":{"name":"json","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
      `${head}[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"elements\\": [{\\"location\\": \\"San Francisco\\", \\"temperature\\": 58, \\"condition\\": \\"sunny\\"}]"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
      `${head}[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
      `${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
      { type: "usage", usage: { prompt_tokens: 849, completion_tokens: 47, total_tokens: 896, prompt_tokens_details: { cached_tokens: 0 } } },
      `${head}[],"usage":{"prompt_tokens":849,"completion_tokens":47,"total_tokens":896,"prompt_tokens_details":{"cached_tokens":0}}}`,
    ]);
  });

  it("when include_usage is off, then no chunk carries usage and the route still gets the usage event", async () => {
    const out = await collect(messagesStreamToChat(from(anthropic(fixture("anthropic-json-tool.chunks.txt"))), { ...toChat, includeUsage: false }));
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [{ index: 0, id: "toolu_01KFbKqPYSuAKujiL6mTfzYA", type: "function", function: { name: "json", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "}" } }] }),
      chunk({}, "tool_calls"),
      { type: "usage", usage: { prompt_tokens: 849, completion_tokens: 47, total_tokens: 896, prompt_tokens_details: { cached_tokens: 0 } } },
    ]);
    for (const e of out) if (e.type === "chunk") expect("usage" in e.chunk).toBe(false);
  });

  it("when the recorded text stream is translated, then each text_delta is a content chunk and end_turn is stop", async () => {
    const out = await collect(messagesStreamToChat(from(anthropic(fixture("anthropic-text.chunks.txt"))), { ...toChat, includeUsage: false }));
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello" }),
      chunk({ content: "! I" }),
      chunk({ content: "'m doing well, thank you for asking" }),
      chunk({ content: ". How are you doing today?" }),
      chunk({ content: " Is" }),
      chunk({ content: " there anything I can help you with?" }),
      chunk({}, "stop"),
      { type: "usage", usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, prompt_tokens_details: { cached_tokens: 0 } } },
    ]);
  });

  it("when a tool without parameters streams no JSON, then its arguments are {} and tool indexes count from 0", async () => {
    const out = await collect(messagesStreamToChat(from(anthropic(fixture("anthropic-tool-no-args.chunks.txt"))), { ...toChat, includeUsage: false }));
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "I'll update the issue list for" }),
      chunk({ content: " you." }),
      chunk({ tool_calls: [{ index: 0, id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", type: "function", function: { name: "updateIssueList", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      { type: "usage", usage: { prompt_tokens: 565, completion_tokens: 48, total_tokens: 613, prompt_tokens_details: { cached_tokens: 0 } } },
    ]);
  });

  it("when thinking precedes two tool calls, then thinking is dropped and the calls are tool indexes 0 and 1", async () => {
    const events = anthropic([
      {
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "m",
          content: [],
          usage: { input_tokens: 100, output_tokens: 1, cache_creation_input_tokens: 10, cache_read_input_tokens: 50 },
        },
      },
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Two lookups." } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_a", name: "get_weather", input: {} } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"city":"Paris"}' } },
      { type: "content_block_stop", index: 1 },
      { type: "content_block_start", index: 2, content_block: { type: "tool_use", id: "toolu_b", name: "get_time", input: {} } },
      { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"tz":"CET"}' } },
      { type: "content_block_stop", index: 2 },
      { type: "some_future_event", detail: 1 },
      { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 40 } },
      { type: "message_stop" },
    ]);
    const out = await collect(messagesStreamToChat(from(events), { ...toChat, includeUsage: false }));
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [{ index: 0, id: "toolu_a", type: "function", function: { name: "get_weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: "toolu_b", type: "function", function: { name: "get_time", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"tz":"CET"}' } }] }),
      chunk({}, "tool_calls"),
      // input 100 + cache write 10 + cache read 50; the output count is message_delta's, cumulative
      { type: "usage", usage: { prompt_tokens: 160, completion_tokens: 40, total_tokens: 200, prompt_tokens_details: { cached_tokens: 50 } } },
    ]);
  });

  it("when the upstream sends an error event mid-stream, then the text so far is followed by an error and nothing else", async () => {
    const [start, blockStart, , first] = fixture("anthropic-text.chunks.txt");
    const events = anthropic([
      start!,
      blockStart!,
      first!,
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
      { type: "message_stop" },
    ]);
    const out = await collect(messagesStreamToChat(from(events), { ...toChat, includeUsage: true }));
    expect(out.map((e) => (e.type === "chunk" ? e.chunk.choices[0]?.delta : e))).toEqual([
      { role: "assistant", content: "" },
      { content: "Hello" },
      { type: "error", error: { message: "Overloaded", type: "server_error", code: "overloaded_error" } },
    ]);
  });

  it("when the adapter reports a failure, then it becomes the same chat error", async () => {
    const [start] = fixture("anthropic-text.chunks.txt");
    const events: MessagesStreamEvent[] = [...anthropic([start!]), { type: "error", error: { message: "Overloaded", type: "overloaded_error", code: null } }];
    const out = await collect(messagesStreamToChat(from(events), { ...toChat, includeUsage: false }));
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      { type: "error", error: { message: "Overloaded", type: "server_error", code: "overloaded_error" } },
    ]);
  });

  it("when the stream is cut short before message_delta, then it ends with the early-end error and no usage", async () => {
    const events = anthropic(fixture("anthropic-text.chunks.txt").slice(0, 5));
    const out = await collect(messagesStreamToChat(from(events), { ...toChat, includeUsage: false }));
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello" }),
      chunk({ content: "! I" }),
      { type: "error", error: { message: "The model provider ended the stream early", type: "server_error", code: "upstream_error" } },
    ]);
  });

  it("when the stream is cut between message_delta and message_stop, then the usage counted so far goes before the error", async () => {
    const lines = fixture("anthropic-text.chunks.txt");
    const out = await collect(messagesStreamToChat(from(anthropic(lines.slice(0, -1))), { ...toChat, includeUsage: true }));
    expect(out.slice(-3)).toEqual([
      { type: "chunk", chunk: expect.objectContaining({ choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }], usage: null }) },
      { type: "usage", usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, prompt_tokens_details: { cached_tokens: 0 } } },
      { type: "error", error: { message: "The model provider ended the stream early", type: "server_error", code: "upstream_error" } },
    ]);
  });

  it("when no id is given, then every chunk shares one chatcmpl- id", async () => {
    const out = await collect(messagesStreamToChat(from(anthropic(fixture("anthropic-text.chunks.txt"))), { publicModel: "m", includeUsage: true }));
    const ids = new Set(out.flatMap((e) => (e.type === "chunk" ? [e.chunk.id] : [])));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
  });
});

// ------------------------------------------------------------------ chat chunks → Anthropic events

describe("chatStreamToMessages", () => {
  const textExpected = [
    messageStart,
    textStart(0),
    text(0, "**"),
    text(0, "Holiday"),
    text(0, " Name"),
    text(0, ":**"),
    stop(0),
    messageDelta("end_turn", usage(16, 300)),
    messageStop,
  ];

  it("when the recorded text stream comes with usage as an event only, then it is one text block and usage in message_delta", async () => {
    const out = await collect(chatStreamToMessages(from(relayed(fixture("openai-text.chunks.txt"), false)), toMessages));
    expect(out).toEqual(textExpected);
  });

  it("when the chunks themselves carry usage (include_usage on), then the output is the same", async () => {
    const out = await collect(chatStreamToMessages(from(relayed(fixture("openai-text.chunks.txt"), true)), toMessages));
    expect(out).toEqual(textExpected);
  });

  it("when one tool call streams its arguments, then it is one tool_use block with input_json_delta pieces", async () => {
    const out = await collect(chatStreamToMessages(from(relayed(fixture("openai-tool-call.chunks.txt"), true)), toMessages));
    expect(out).toEqual([
      messageStart,
      toolStart(0, "call_1", "get_weather"),
      json(0, '{"city":'),
      json(0, '"Paris"}'),
      stop(0),
      messageDelta("tool_use", usage(7, 4)),
      messageStop,
    ]);
  });

  it("when two tool calls come one after the other, then each is its own block, streamed live, and cached input is a cache read", async () => {
    const log: string[] = [];
    async function* source(): AsyncGenerator<ChatStreamEvent> {
      for (const event of relayed(fixture("openai-parallel-tool-calls.chunks.txt"), false)) {
        if (event.type === "chunk" && event.chunk.choices[0]?.finish_reason) log.push("<finish chunk read>");
        yield event;
      }
    }
    const out: MessagesStreamEvent[] = [];
    for await (const event of chatStreamToMessages(source(), toMessages)) {
      out.push(event);
      if (event.type === "event") log.push(event.event.type);
    }
    expect(out).toEqual([
      messageStart,
      toolStart(0, "call_a", "get_weather"),
      json(0, '{"city":'),
      json(0, ' "Paris"}'),
      stop(0),
      toolStart(1, "call_b", "get_time"),
      json(1, '{"tz":'),
      json(1, ' "CET"}'),
      stop(1),
      messageDelta("tool_use", usage(40, 38, 20)),
      messageStop,
    ]);
    // The second call's block opened and streamed before the finish chunk was even read.
    expect(log.indexOf("<finish chunk read>")).toBe(log.lastIndexOf("content_block_delta") + 1);
  });

  it("when two tool calls interleave, then each call's fragments are still one contiguous block, in order", async () => {
    const out = await collect(chatStreamToMessages(from(relayed(fixture("openai-interleaved-tool-calls.chunks.txt"), false)), toMessages));
    expect(out).toEqual([
      messageStart,
      toolStart(0, "call_a", "list_files"),
      json(0, '{"path"'),
      json(0, ':"src"}'),
      stop(0),
      toolStart(1, "call_b", "search_files"),
      json(1, '{"query"'),
      json(1, ':"deprecated"}'),
      stop(1),
      messageDelta("tool_use", usage(50, 30)),
      messageStop,
    ]);
  });

  it("when a server leaves out the index, then a new id still starts a new call", async () => {
    const base = { id: "c", object: "chat.completion.chunk", created: 1, model: "m" };
    const chunks = [
      { ...base, choices: [{ index: 0, delta: { content: "Checking." }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ id: "call_x", function: { name: "a", arguments: '{"n":1}' } }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ id: "call_y", function: { name: "b", arguments: { n: 2 } } }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
    ];
    const out = await collect(chatStreamToMessages(from(relayed(chunks, false)), toMessages));
    expect(out).toEqual([
      messageStart,
      textStart(0),
      text(0, "Checking."),
      stop(0),
      toolStart(1, "call_x", "a"),
      json(1, '{"n":1}'),
      stop(1),
      toolStart(2, "call_y", "b"),
      json(2, '{"n":2}'),
      stop(2),
      messageDelta("tool_use", { output_tokens: 0 }), // the source never said its usage
      messageStop,
    ]);
  });

  it("when a call's name comes after its first fragment, then its block waits for the name", async () => {
    const base = { id: "c", object: "chat.completion.chunk", created: 1, model: "m" };
    const calls = (fragment: Record<string, unknown>) => ({ ...base, choices: [{ index: 0, delta: { tool_calls: [fragment] }, finish_reason: null }] });
    const chunks = [
      calls({ index: 0, id: "call_late", function: { arguments: '{"q"' } }),
      calls({ index: 0, function: { name: "search", arguments: ':"x"}' } }),
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }], usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 } },
    ];
    const out = await collect(chatStreamToMessages(from(relayed(chunks, true)), toMessages));
    expect(out).toEqual([
      messageStart,
      toolStart(0, "call_late", "search"),
      json(0, '{"q"'),
      json(0, ':"x"}'),
      stop(0),
      messageDelta("tool_use", usage(5, 6)),
      messageStop,
    ]);
  });

  it("when the source fails mid-stream, then an api_error event ends the stream", async () => {
    const events: ChatStreamEvent[] = [
      ...relayed(fixture("openai-text.chunks.txt").slice(0, 3), false),
      { type: "error", error: { message: "upstream exploded", type: "server_error", code: null } },
    ];
    const out = await collect(chatStreamToMessages(from(events), toMessages));
    expect(out).toEqual([
      messageStart,
      textStart(0),
      text(0, "**"),
      text(0, "Holiday"),
      ev({ type: "error", error: { type: "api_error", message: "upstream exploded" } }),
    ]);
  });

  it("when the source says it is overloaded, then the error is an overloaded_error", async () => {
    for (const error of [
      { message: "Overloaded", type: "overloaded_error", code: null },
      { message: "busy", type: "server_error", code: "upstream_unavailable" },
    ]) {
      const out = await collect(chatStreamToMessages(from<ChatStreamEvent>([{ type: "error", error }]), toMessages));
      expect(out).toEqual([ev({ type: "error", error: { type: "overloaded_error", message: error.message } })]);
    }
  });

  it("when the source ends without a finish chunk, then the stream ends with the early-end error", async () => {
    const out = await collect(chatStreamToMessages(from(relayed(fixture("openai-tool-call.chunks.txt").slice(0, 2), false)), toMessages));
    expect(out).toEqual([
      messageStart,
      toolStart(0, "call_1", "get_weather"),
      json(0, '{"city":'),
      ev({ type: "error", error: { type: "api_error", message: "The model provider ended the stream early" } }),
    ]);
  });

  it("when a random id is made, then it is a msg_ id", async () => {
    const out = await collect(chatStreamToMessages(from(relayed(fixture("openai-text.chunks.txt"), false)), { publicModel: "m" }));
    const first = out[0];
    expect(first?.type === "event" && (first.event.message as { id: string }).id).toMatch(/^msg_[0-9a-f]{32}$/);
  });
});

// ----------------------------------------------------------------------------------- round trips

interface Summary {
  text: string;
  tools: { id: string; name: string; input: unknown }[];
  stopReason: unknown;
  usage: unknown;
}

/** The fields of an Anthropic event a client reads, for the summaries below. */
interface SeenEvent {
  type: string;
  index: number;
  message: { usage: { input_tokens: number } };
  content_block: { type: string; id: string; name: string };
  delta: { type?: string; text?: string; partial_json?: string; stop_reason?: string };
  usage: { input_tokens?: number; output_tokens: number };
}

/** What a Messages client makes of a stream: joined text, each tool's joined JSON, stop reason, usage. */
function summarize(events: MessagesStreamEvent[]): Summary {
  const summary: Summary = { text: "", tools: [], stopReason: undefined, usage: undefined };
  const json = new Map<number, string>();
  const tools = new Map<number, { id: string; name: string }>();
  let input: number | undefined;
  for (const item of events) {
    if (item.type !== "event") throw new Error("unexpected failure");
    const e = item.event as unknown as SeenEvent;
    if (e.type === "content_block_start" && e.content_block.type === "tool_use") tools.set(e.index, { id: e.content_block.id, name: e.content_block.name });
    if (e.type === "content_block_delta" && e.delta.type === "text_delta") summary.text += e.delta.text;
    if (e.type === "content_block_delta" && e.delta.type === "input_json_delta") json.set(e.index, (json.get(e.index) ?? "") + e.delta.partial_json);
    // As the SDK counts: input from message_start unless message_delta repeats it, output from message_delta.
    if (e.type === "message_start") input = e.message.usage.input_tokens;
    if (e.type === "message_delta") {
      summary.stopReason = e.delta.stop_reason;
      summary.usage = { input: e.usage.input_tokens ?? input, output: e.usage.output_tokens };
    }
  }
  for (const [index, tool] of tools) summary.tools.push({ ...tool, input: JSON.parse(json.get(index) || "{}") });
  return summary;
}

interface ToolCallDelta {
  index: number;
  id?: string;
  function: { name?: string; arguments?: string };
}

/** What a chat client makes of a stream: each call joined by index, and the finish reason. */
function chatCalls(events: ChatStreamEvent[]) {
  const joined: Record<number, { id?: string; name?: string; args: string }> = {};
  let finish: unknown;
  for (const e of events) {
    if (e.type !== "chunk") continue;
    const choice = e.chunk.choices[0];
    if (choice?.finish_reason) finish = choice.finish_reason;
    for (const call of (choice?.delta as { tool_calls?: ToolCallDelta[] } | undefined)?.tool_calls ?? []) {
      joined[call.index] ??= { args: "" };
      const slot = joined[call.index]!;
      if (call.id) Object.assign(slot, { id: call.id, name: call.function.name });
      slot.args += call.function.arguments ?? "";
    }
  }
  return { joined, finish };
}

describe("round trip", () => {
  const parallel = [
    {
      type: "message_start",
      message: { id: "msg_p", type: "message", role: "assistant", model: "m", content: [], usage: { input_tokens: 30, output_tokens: 1 } },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Both at once." } },
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_a", name: "get_weather", input: {} } },
    { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"city":' } },
    { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '"Paris"}' } },
    { type: "content_block_stop", index: 1 },
    { type: "content_block_start", index: 2, content_block: { type: "tool_use", id: "toolu_b", name: "get_time", input: {} } },
    { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"tz":"CET"}' } },
    { type: "content_block_stop", index: 2 },
    { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 25 } },
    { type: "message_stop" },
  ];
  const sources: [string, Record<string, unknown>[]][] = [
    ["the recorded tool stream", fixture("anthropic-json-tool.chunks.txt")],
    ["the recorded text stream", fixture("anthropic-text.chunks.txt")],
    ["text then a tool without parameters", fixture("anthropic-tool-no-args.chunks.txt")],
    ["text then two tool calls", parallel],
  ];

  for (const [name, payloads] of sources) {
    for (const includeUsage of [false, true]) {
      it(`when ${name} goes messages → chat → messages (include_usage ${includeUsage}), then text, tools, arguments, stop reason and usage survive`, async () => {
        const original = anthropic(payloads);
        const chat = messagesStreamToChat(from(original), { ...toChat, includeUsage });
        const back = await collect(chatStreamToMessages(chat, toMessages));
        expect(summarize(back)).toEqual(summarize(original));
        expect(summarize(back).tools.length + summarize(back).text.length).toBeGreaterThan(0);
      });
    }
  }

  it("when chat goes chat → messages → chat, then content, each call's joined arguments and finish reason survive", async () => {
    const original = relayed(fixture("openai-parallel-tool-calls.chunks.txt"), false);
    const back = await collect(messagesStreamToChat(chatStreamToMessages(from(original), toMessages), { ...toChat, includeUsage: false }));
    expect(chatCalls(back)).toEqual(chatCalls(original));
    expect(Object.keys(chatCalls(back).joined)).toHaveLength(2);
    expect(back.filter((e) => e.type === "usage")).toEqual([
      { type: "usage", usage: { prompt_tokens: 60, completion_tokens: 38, total_tokens: 98, prompt_tokens_details: { cached_tokens: 20 } } },
    ]);
  });
});
