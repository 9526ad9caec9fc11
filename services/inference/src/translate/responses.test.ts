import { ChatCompletion, MessagesResponse } from "@gw/contracts";
import { assertOpenAI } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import { chatCompletionToMessage, messageToChatCompletion } from "./responses";

const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

const anthropicMessage = (content: Record<string, unknown>[], stop_reason: string | null, extra: Record<string, unknown> = {}): MessagesResponse =>
  MessagesResponse.parse({
    id: "msg_01ABC",
    type: "message",
    role: "assistant",
    model: "claude-up-1",
    content,
    stop_reason,
    stop_sequence: null,
    usage,
    ...extra,
  });

const chatCompletion = (message: Record<string, unknown>, finish_reason: string | null, extra: Record<string, unknown> = {}): ChatCompletion =>
  ChatCompletion.parse({
    id: "chatcmpl-XYZ",
    object: "chat.completion",
    created: 1700000000,
    model: "gpt-up",
    choices: [{ index: 0, message: { role: "assistant", refusal: null, ...message }, logprobs: null, finish_reason }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    ...extra,
  });

describe("messageToChatCompletion", () => {
  const cases: { name: string; msg: MessagesResponse; message: Record<string, unknown>; finish: string }[] = [
    {
      name: "when the answer is text, then it is message.content and finish_reason stop",
      msg: anthropicMessage([{ type: "text", text: "Hello!", citations: null }], "end_turn"),
      message: { role: "assistant", content: "Hello!", refusal: null, annotations: [] },
      finish: "stop",
    },
    {
      name: "when text comes in several blocks, then they are concatenated",
      msg: anthropicMessage(
        [
          { type: "text", text: "The answer is " },
          { type: "text", text: "42" },
          { type: "text", text: "." },
        ],
        "end_turn",
      ),
      message: { role: "assistant", content: "The answer is 42.", refusal: null, annotations: [] },
      finish: "stop",
    },
    {
      name: "when the model calls two tools in parallel after some text, then both are tool_calls and finish_reason tool_calls",
      msg: anthropicMessage(
        [
          { type: "text", text: "Checking." },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
          { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Rome", units: ["C"] } },
        ],
        "tool_use",
      ),
      message: {
        role: "assistant",
        content: "Checking.",
        refusal: null,
        annotations: [],
        tool_calls: [
          { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "toolu_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome","units":["C"]}' } },
        ],
      },
      finish: "tool_calls",
    },
    {
      name: "when the model only calls a tool, then content is null",
      msg: anthropicMessage([{ type: "tool_use", id: "toolu_1", name: "now", input: {} }], "tool_use"),
      message: {
        role: "assistant",
        content: null,
        refusal: null,
        annotations: [],
        tool_calls: [{ id: "toolu_1", type: "function", function: { name: "now", arguments: "{}" } }],
      },
      finish: "tool_calls",
    },
    {
      name: "when the answer is empty, then content is an empty string",
      msg: anthropicMessage([], "end_turn"),
      message: { role: "assistant", content: "", refusal: null, annotations: [] },
      finish: "stop",
    },
    {
      name: "when thinking blocks come with the answer, then they are left out",
      msg: anthropicMessage(
        [
          { type: "thinking", thinking: "hmm", signature: "s" },
          { type: "redacted_thinking", data: "x" },
          { type: "text", text: "4" },
        ],
        "end_turn",
      ),
      message: { role: "assistant", content: "4", refusal: null, annotations: [] },
      finish: "stop",
    },
    {
      name: "when the model ran out of tokens, then finish_reason is length",
      msg: anthropicMessage([{ type: "text", text: "Once upon" }], "max_tokens"),
      message: { role: "assistant", content: "Once upon", refusal: null, annotations: [] },
      finish: "length",
    },
    {
      name: "when a stop sequence ended the answer, then finish_reason is stop",
      msg: anthropicMessage([{ type: "text", text: "a" }], "stop_sequence", { stop_sequence: "END" }),
      message: { role: "assistant", content: "a", refusal: null, annotations: [] },
      finish: "stop",
    },
    {
      name: "when the model refused, then finish_reason is content_filter",
      msg: anthropicMessage([], "refusal"),
      message: { role: "assistant", content: "", refusal: null, annotations: [] },
      finish: "content_filter",
    },
    {
      name: "when the context window ran out, then finish_reason is length",
      msg: anthropicMessage([{ type: "text", text: "a" }], "model_context_window_exceeded"),
      message: { role: "assistant", content: "a", refusal: null, annotations: [] },
      finish: "length",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = messageToChatCompletion(c.msg, "public-model", 1700000000);
      assertOpenAI("CreateChatCompletionResponse", out);
      ChatCompletion.parse(out);
      expect(out).toEqual({
        id: "chatcmpl-01ABC",
        object: "chat.completion",
        created: 1700000000,
        model: "public-model",
        choices: [{ index: 0, message: c.message, logprobs: null, finish_reason: c.finish }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } },
      });
    });
  }

  it("when the prompt was partly cached, then prompt_tokens counts cache reads and writes and cached_tokens the reads", () => {
    const msg = anthropicMessage([{ type: "text", text: "a" }], "end_turn", {
      usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 1000 },
    });
    expect(messageToChatCompletion(msg, "m", 1).usage).toEqual({
      prompt_tokens: 1110,
      completion_tokens: 5,
      total_tokens: 1115,
      prompt_tokens_details: { cached_tokens: 1000 },
    });
  });

  it("when no creation time is given, then created is now in seconds", () => {
    const before = Math.floor(Date.now() / 1000);
    const out = messageToChatCompletion(anthropicMessage([{ type: "text", text: "a" }], "end_turn"), "m");
    expect(out.created).toBeGreaterThanOrEqual(before);
    expect(out.created).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it("when the message id has no msg_ prefix, then the whole id follows chatcmpl-", () => {
    expect(messageToChatCompletion(anthropicMessage([], "end_turn", { id: "abc" }), "m", 1).id).toBe("chatcmpl-abc");
  });
});

describe("chatCompletionToMessage", () => {
  const cases: { name: string; c: ChatCompletion; content: Record<string, unknown>[]; stop: string | null }[] = [
    {
      name: "when the answer is text, then it is one text block and stop_reason end_turn",
      c: chatCompletion({ content: "Hello!" }, "stop"),
      content: [{ type: "text", text: "Hello!" }],
      stop: "end_turn",
    },
    {
      name: "when the model calls two tools in parallel, then both are tool_use blocks with parsed input and stop_reason tool_use",
      c: chatCompletion(
        {
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
          ],
        },
        "tool_calls",
      ),
      content: [
        { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
        { type: "tool_use", id: "call_2", name: "get_weather", input: { city: "Rome" } },
      ],
      stop: "tool_use",
    },
    {
      name: "when text comes with a tool call whose arguments are not JSON, then a text block and a tool_use with input {}",
      c: chatCompletion(
        { content: "Let me check.", tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "{oops" } }] },
        "tool_calls",
      ),
      content: [
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "call_1", name: "f", input: {} },
      ],
      stop: "tool_use",
    },
    {
      name: "when content is empty, then there is no text block",
      c: chatCompletion({ content: "" }, "stop"),
      content: [],
      stop: "end_turn",
    },
    {
      name: "when the model ran out of tokens, then stop_reason is max_tokens",
      c: chatCompletion({ content: "Once upon" }, "length"),
      content: [{ type: "text", text: "Once upon" }],
      stop: "max_tokens",
    },
    {
      name: "when the content filter stopped the answer, then stop_reason is refusal",
      c: chatCompletion({ content: null }, "content_filter"),
      content: [],
      stop: "refusal",
    },
    {
      name: "when the model refused with a refusal message, then the refusal is the text",
      c: chatCompletion({ content: null, refusal: "I can't help with that." }, "stop"),
      content: [{ type: "text", text: "I can't help with that." }],
      stop: "end_turn",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = chatCompletionToMessage(c.c, "public-model");
      MessagesResponse.parse(out);
      expect(out).toEqual({
        id: "msg_XYZ",
        type: "message",
        role: "assistant",
        model: "public-model",
        content: c.content,
        stop_reason: c.stop,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      });
    });
  }

  it("when a compatible upstream sends content as text parts, then they join into one text block", () => {
    const c = chatCompletion({ content: null }, "stop");
    // Outside the contract on purpose: some OpenAI-compatible servers answer with parts.
    const parts = [
      { type: "text", text: "a" },
      { type: "text", text: "b" },
    ] as unknown as string;
    const withParts = { ...c, choices: [{ index: 0, message: { role: "assistant", content: parts }, finish_reason: "stop" }] };
    expect(chatCompletionToMessage(withParts, "m").content).toEqual([{ type: "text", text: "ab" }]);
  });

  it("when part of the prompt was cached, then the cached part is a cache read and the rest input", () => {
    const c = chatCompletion({ content: "a" }, "stop", {
      usage: { prompt_tokens: 1100, completion_tokens: 5, total_tokens: 1105, prompt_tokens_details: { cached_tokens: 1000 } },
    });
    expect(chatCompletionToMessage(c, "m").usage).toEqual({
      input_tokens: 100,
      output_tokens: 5,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 1000,
    });
  });

  it("when usage is missing, then every count is 0", () => {
    const c = chatCompletion({ content: "a" }, "stop", { usage: null });
    expect(chatCompletionToMessage(c, "m").usage).toEqual({ input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it("when there are no choices, then the message is empty with no stop reason", () => {
    const out = chatCompletionToMessage(chatCompletion({ content: "a" }, "stop", { choices: [] }), "m");
    expect(out.content).toEqual([]);
    expect(out.stop_reason).toBeNull();
  });
});

describe("round trips", () => {
  it("when an Anthropic answer goes to chat and back, then content, stop reason, usage and id survive", () => {
    const msg = anthropicMessage(
      [
        { type: "text", text: "Checking." },
        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
      ],
      "tool_use",
      { usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 40 } },
    );
    const back = chatCompletionToMessage(messageToChatCompletion(msg, "public", 1), "public");
    expect(back).toEqual({ ...msg, model: "public" });
  });

  it("when a chat answer goes to messages and back, then message, finish reason, usage and id survive", () => {
    const c = chatCompletion(
      { content: "Checking.", tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }] },
      "tool_calls",
    );
    const back = messageToChatCompletion(chatCompletionToMessage(c, "public"), "public", c.created);
    assertOpenAI("CreateChatCompletionResponse", back);
    expect(back).toEqual({
      ...c,
      model: "public",
      choices: [{ ...c.choices[0], message: { ...c.choices[0]?.message, annotations: [] } }],
      usage: { ...c.usage, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });
});
