import { describe, expect, it } from "vitest";
import type { CompletionStreamEvent } from "../types";
import { Completion } from "@gw/contracts";
import { openaiUpstreamBody, relayOpenAIChunks } from "./stream-relay";

const names = { upstreamModel: "gpt-3.5-turbo-instruct", publicModel: "instruct" };

async function* sse(...frames: string[]): AsyncGenerator<Buffer> {
  for (const frame of frames) yield Buffer.from(frame);
}

async function collect(events: AsyncIterable<CompletionStreamEvent>): Promise<CompletionStreamEvent[]> {
  const out: CompletionStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

const chunk = (extra: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: "cmpl-1", object: "text_completion", created: 1, model: names.upstreamModel, ...extra })}\n\n`;
const text = (t: string, usage?: null) =>
  chunk({ choices: [{ text: t, index: 0, logprobs: null, finish_reason: null }], ...(usage === null ? { usage } : {}) });
const usageChunk = chunk({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } });

describe("openaiUpstreamBody", () => {
  it("when streamed, then include_usage is asked for and the caller's other stream options kept", () => {
    expect(openaiUpstreamBody({ model: "instruct", prompt: "p", stream: true, stream_options: { include_obfuscation: false } }, "up")).toEqual({
      model: "up",
      prompt: "p",
      stream: true,
      stream_options: { include_obfuscation: false, include_usage: true },
    });
  });

  it("when not streamed, then only the model changes", () => {
    expect(openaiUpstreamBody({ model: "instruct", prompt: ["a", "b"], max_tokens: 3 }, "up")).toEqual({ model: "up", prompt: ["a", "b"], max_tokens: 3 });
  });
});

describe("relayOpenAIChunks on text completions", () => {
  it("when the caller did not ask for usage, then the usage chunk and usage: null vanish, and usage is an event of its own", async () => {
    const events = await collect(relayOpenAIChunks(sse(text("Hi", null), text(" there", null), usageChunk, "data: [DONE]\n\n"), Completion, names, false));
    expect(events.map((e) => e.type)).toEqual(["chunk", "chunk", "usage"]);
    for (const e of events)
      if (e.type === "chunk") {
        expect(e.chunk.model).toBe("instruct");
        expect(e.chunk).not.toHaveProperty("usage");
      }
    expect(events[2]).toEqual({ type: "usage", usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } });
  });

  it("when the caller asked for usage, then the usage chunk is relayed under the public model name", async () => {
    const events = await collect(relayOpenAIChunks(sse(text("Hi", null), usageChunk, "data: [DONE]\n\n"), Completion, names, true));
    expect(events.map((e) => e.type)).toEqual(["chunk", "usage", "chunk"]);
    expect(events[2]).toMatchObject({ type: "chunk", chunk: { model: "instruct", choices: [], usage: { total_tokens: 5 } } });
  });

  it("when the upstream sends an error mid-stream, then it becomes an error event that names the public model only", async () => {
    const failure = `data: ${JSON.stringify({ error: { message: "gpt-3.5-turbo-instruct overloaded", type: "server_error", code: null } })}\n\n`;
    const events = await collect(relayOpenAIChunks(sse(text("Hi"), failure), Completion, names, false));
    expect(events.at(-1)).toEqual({ type: "error", error: { message: "instruct overloaded", type: "server_error", code: null } });
  });

  it("when the stream ends without [DONE], then the last event is an error", async () => {
    const events = await collect(relayOpenAIChunks(sse(text("Hi")), Completion, names, false));
    expect(events.at(-1)).toMatchObject({ type: "error", error: { code: "upstream_error" } });
  });

  it("when a frame is split across reads and keep-alive comments come in between, then chunks still come out whole", async () => {
    const frame = text("Hello");
    const events = await collect(relayOpenAIChunks(sse(": keep-alive\n\n", frame.slice(0, 20), frame.slice(20), "data: [DONE]\n\n"), Completion, names, false));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "chunk", chunk: { choices: [{ text: "Hello" }] } });
  });
});
