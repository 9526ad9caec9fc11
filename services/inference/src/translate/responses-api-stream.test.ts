import { readFileSync } from "node:fs";
import { ResponsesRequest, type ChatCompletionChunk, type MessagesStreamEvent as MessagesEvent, type ResponsesStreamEvent } from "@gw/contracts";
import { assertOpenAI } from "@gw/testkit";
import { ResponseStream } from "openai/lib/responses/ResponseStream";
import { describe, expect, it } from "vitest";
import type { ChatStreamEvent } from "../providers/types";
import { responseShell, type IdMaker } from "./responses-api";
import { chatStreamToResponses } from "./responses-api-stream";
import { messagesStreamToChat } from "./stream";

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

/** OpenAI chunks as the OpenAI adapter hands them on when the caller did not ask for usage. */
function relayed(chunks: Record<string, unknown>[]): ChatStreamEvent[] {
  const out: ChatStreamEvent[] = [];
  for (const raw of chunks) {
    const { usage, ...rest } = raw as ChatCompletionChunk;
    if (usage) out.push({ type: "usage", usage });
    if (!(usage && rest.choices.length === 0)) out.push({ type: "chunk", chunk: rest });
  }
  return out;
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): ChatStreamEvent {
  return {
    type: "chunk",
    chunk: {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    },
  };
}
const usage = (prompt: number, completion: number): ChatStreamEvent => ({
  type: "usage",
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

function countingIds(): IdMaker {
  const n: Record<string, number> = {};
  return (prefix) => {
    n[prefix] = (n[prefix] ?? 0) + 1;
    return `${prefix}_${n[prefix]}`;
  };
}

/** Runs the translation; every event must match the spec's `ResponseStreamEvent`. */
async function translate(source: ChatStreamEvent[] | AsyncIterable<ChatStreamEvent>, body: Record<string, unknown> = {}): Promise<ResponsesStreamEvent[]> {
  const request = ResponsesRequest.parse({ model: "gw-model", input: "hi", ...body });
  const shell = responseShell(request, "resp_1", 100);
  const out: ResponsesStreamEvent[] = [];
  const events = Array.isArray(source) ? from(source) : source;
  for await (const event of chatStreamToResponses(events, { shell, ids: countingIds(), now: () => 101 })) {
    assertOpenAI("ResponseStreamEvent", event);
    out.push(JSON.parse(JSON.stringify(event)) as ResponsesStreamEvent); // as sent, before any later mutation
  }
  for (const [i, event] of out.entries()) expect(event.sequence_number).toBe(i);
  return out;
}

const types = (events: ResponsesStreamEvent[]) => events.map((e) => e.type);
const last = (events: ResponsesStreamEvent[]) => events.at(-1) as ResponsesStreamEvent & { response: Record<string, unknown> };

/** What the official SDK's stream helper makes of the events (as newline-delimited JSON). */
async function throughSdk(events: ResponsesStreamEvent[]) {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(`${events.map((e) => JSON.stringify(e)).join("\n")}\n`));
      controller.close();
    },
  });
  const deltas: string[] = [];
  const stream = ResponseStream.fromReadableStream(body);
  stream.on("response.output_text.delta", (e) => deltas.push(e.delta));
  return { final: await stream.finalResponse(), deltas };
}

// -------------------------------------------------------------------------------------- tests

describe("chatStreamToResponses", () => {
  it("when OpenAI streams text, then the Responses text sequence comes out, ending with the full response and usage", async () => {
    const events = await translate(relayed(fixture("openai-text.chunks.txt")));
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events[0]).toMatchObject({ response: { id: "resp_1", status: "in_progress", output: [], store: false, model: "gw-model" } });
    expect(events[2]).toEqual({
      type: "response.output_item.added",
      output_index: 0,
      item: { type: "message", id: "msg_1", status: "in_progress", role: "assistant", content: [] },
      sequence_number: 2,
    });
    expect(events[4]).toEqual({
      type: "response.output_text.delta",
      item_id: "msg_1",
      output_index: 0,
      content_index: 0,
      delta: "**",
      logprobs: [],
      sequence_number: 4,
    });
    expect(events[8]).toMatchObject({ type: "response.output_text.done", text: "**Holiday Name:**" });
    const done = last(events).response;
    assertOpenAI("Response", done);
    expect(done).toMatchObject({
      status: "completed",
      completed_at: 101,
      output: [
        { type: "message", id: "msg_1", status: "completed", content: [{ type: "output_text", text: "**Holiday Name:**", annotations: [], logprobs: [] }] },
      ],
      usage: {
        input_tokens: 16,
        output_tokens: 300,
        total_tokens: 316,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    });
    const sdk = await throughSdk(events);
    expect(sdk.final.output_text).toBe("**Holiday Name:**");
    expect(sdk.deltas.join("")).toBe("**Holiday Name:**");
  });

  it("when OpenAI streams a tool call, then a function_call item streams its arguments", async () => {
    const events = await translate(relayed(fixture("openai-tool-call.chunks.txt")));
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events[2]).toMatchObject({
      item: { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: "", status: "in_progress" },
    });
    expect(events[5]).toEqual({
      type: "response.function_call_arguments.done",
      item_id: "fc_1",
      output_index: 0,
      name: "get_weather",
      arguments: '{"city":"Paris"}',
      sequence_number: 5,
    });
    expect(last(events).response.output).toEqual([
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
    ]);
    const sdk = await throughSdk(events);
    expect(sdk.final.output[0]).toMatchObject({ type: "function_call", arguments: '{"city":"Paris"}' });
    expect(sdk.final.output_text).toBe("");
  });

  it.each(["openai-parallel-tool-calls.chunks.txt", "openai-interleaved-tool-calls.chunks.txt"])(
    "when %s has two calls, then they come out as two items, one after the other",
    async (name) => {
      const events = await translate(relayed(fixture(name)));
      // Each item is added, streamed and done before the next is added.
      const itemOf = (e: ResponsesStreamEvent) => (e as { output_index?: number }).output_index;
      const sequence = events.filter((e) => itemOf(e) !== undefined).map(itemOf);
      expect(sequence).toEqual([...sequence].sort());
      const output = last(events).response.output as { call_id: string; arguments: string }[];
      expect(output).toHaveLength(2);
      for (const call of output) expect(() => JSON.parse(call.arguments)).not.toThrow();
      expect(new Set(output.map((c) => c.call_id)).size).toBe(2);
    },
  );

  it("when an Anthropic stream is translated to chat first, then the same Responses sequence comes out", async () => {
    const anthropic = fixture("anthropic-text.chunks.txt").map((event) => ({ type: "event" as const, event: event as MessagesEvent }));
    const chat = messagesStreamToChat(from(anthropic), { publicModel: "gw-model", includeUsage: false });
    const events = await translate(chat);
    expect(types(events).slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types(events).slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    const done = last(events).response;
    const text = (done.output as { content: { text: string }[] }[])[0]?.content[0]?.text;
    expect(text).toBe("Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?");
    expect(done.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
  });

  it("when an Anthropic tool without parameters streams, then its arguments are {}", async () => {
    const anthropic = fixture("anthropic-tool-no-args.chunks.txt").map((event) => ({ type: "event" as const, event: event as MessagesEvent }));
    const events = await translate(messagesStreamToChat(from(anthropic), { publicModel: "gw-model", includeUsage: false }));
    const call = (last(events).response.output as { type: string; arguments: string }[]).find((o) => o.type === "function_call");
    expect(call?.arguments).toBe("{}");
  });

  it("when the answer is cut by the token limit, then the stream ends with response.incomplete", async () => {
    const events = await translate([chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({}, "length"), usage(3, 1)], {
      max_output_tokens: 1,
    });
    expect(last(events)).toMatchObject({
      type: "response.incomplete",
      response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, completed_at: null, output: [{ status: "incomplete" }] },
    });
  });

  it("when the model refuses, then a refusal part streams", async () => {
    const events = await translate([chunk({ role: "assistant", refusal: "" }), chunk({ refusal: "No." }), chunk({}, "stop"), usage(3, 1)]);
    expect(types(events)).toContain("response.refusal.delta");
    expect(events.find((e) => e.type === "response.refusal.done")).toMatchObject({ refusal: "No." });
    expect(last(events).response.output).toEqual([
      { type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "refusal", refusal: "No." }] },
    ]);
  });

  it("when text precedes a call, then the message closes before the call opens", async () => {
    const events = await translate([
      chunk({ role: "assistant", content: "Let me look." }),
      chunk({ tool_calls: [{ index: 0, id: "call_x", type: "function", function: { name: "f", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      usage(3, 4),
    ]);
    expect(types(events).slice(2)).toEqual([
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
  });

  it("when the answer is empty, then it is one empty message, as in the non-streamed answer", async () => {
    const events = await translate([chunk({ role: "assistant", content: "" }), chunk({}, "stop"), usage(3, 0)]);
    expect(types(events)).not.toContain("response.output_text.delta");
    expect(last(events).response.output).toEqual([
      { type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "", annotations: [], logprobs: [] }] },
    ]);
  });

  it("when the upstream fails mid-stream, then an error event and response.failed end it, with what came so far", async () => {
    const events = await translate([
      chunk({ role: "assistant", content: "Hal" }),
      { type: "error", error: { message: "Overloaded", type: "server_error", code: "overloaded_error" } },
    ]);
    expect(types(events).slice(-2)).toEqual(["error", "response.failed"]);
    expect(events.at(-2)).toEqual({ type: "error", code: "overloaded_error", message: "Overloaded", param: null, sequence_number: events.length - 2 });
    const failed = last(events).response;
    assertOpenAI("Response", failed);
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "server_error", message: "Overloaded" },
      output: [{ status: "incomplete", content: [{ text: "Hal" }] }],
    });
    expect(failed).not.toHaveProperty("usage");
    // The SDK's stream helper takes the error event as the stream's failure.
    await expect(throughSdk(events)).rejects.toMatchObject({ type: "error", message: "Overloaded" });
  });

  it("when a rate limit ends the stream after the final usage, then response.failed says rate_limit_exceeded and carries the usage", async () => {
    const events = await translate([
      chunk({ content: "x" }),
      chunk({}, "stop"),
      usage(5, 1),
      { type: "error", error: { message: "slow down", type: "rate_limit_error", code: null } },
    ]);
    expect(last(events).response).toMatchObject({ error: { code: "rate_limit_exceeded" }, usage: { total_tokens: 6 } });
  });

  it("when the source ends without a finish, then the stream fails as ended early", async () => {
    const events = await translate([chunk({ role: "assistant", content: "Hal" })]);
    expect(events.at(-2)).toMatchObject({ type: "error", code: "upstream_error", message: "The model provider ended the stream early" });
    expect(last(events).type).toBe("response.failed");
  });
});
