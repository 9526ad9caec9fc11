import { describe, expect, it } from "vitest";
import { assembleStream } from "./assemble-stream";

const sse = (events: unknown[], named = false) =>
  events.map((e) => `${named ? `event: ${(e as { type: string }).type}\n` : ""}data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`).join("");

describe("assembling a captured stream", () => {
  it("when OpenAI chat chunks stream text and a tool call, then they become the chat.completion the JSON answer would be", () => {
    const base = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt-4o" };
    const text = sse([
      { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { content: "Hel" }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { content: "lo" }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get", arguments: '{"a"' } }] } }] },
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }, finish_reason: "tool_calls" }] },
      { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } },
      "[DONE]",
    ]);
    expect(assembleStream(text)).toEqual({
      id: "chatcmpl-1",
      created: 1,
      model: "gpt-4o",
      object: "chat.completion",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "Hello", tool_calls: [{ id: "call_1", type: "function", function: { name: "get", arguments: '{"a":1}' } }] },
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });

  it("when Anthropic streams a message with text and a tool use, then they become the message", () => {
    const text = sse(
      [
        {
          type: "message_start",
          message: { id: "msg_1", type: "message", role: "assistant", model: "claude", content: [], usage: { input_tokens: 9, output_tokens: 1 } },
        },
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi " } },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "there" } },
        { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "tu_1", name: "f", input: {} } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"x":' } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "2}" } },
        { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 12 } },
        { type: "message_stop" },
      ],
      true,
    );
    expect(assembleStream(text)).toEqual({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude",
      stop_reason: "tool_use",
      usage: { input_tokens: 9, output_tokens: 12 },
      content: [
        { type: "text", text: "Hi there" },
        { type: "tool_use", id: "tu_1", name: "f", input: { x: 2 } },
      ],
    });
  });

  it("when a Responses stream completes, then its final response is the answer; another kind of stream is not assembled", () => {
    const response = { id: "resp_1", object: "response", status: "completed", output: [] };
    expect(
      assembleStream(
        sse([
          { type: "response.created", response: { id: "resp_1" } },
          { type: "response.completed", response },
        ]),
      ),
    ).toEqual(response);
    expect(assembleStream(sse([{ type: "image_generation.partial_image", b64_json: "x" }]))).toBeUndefined();
  });
});
